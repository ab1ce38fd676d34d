//! The messaging rail between agents: send with a signed acceptance receipt ([`messages`]),
//! inbox paging and long-poll, the `agent.message` push queue ([`callbacks`]), and the Message
//! resource all of them show ([`message`]).

pub mod callbacks;
pub mod message;
pub mod messages;
pub mod operator;
