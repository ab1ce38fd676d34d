//! Name lookup without the C library: `/etc/hosts`, then the name servers of `/etc/resolv.conf`
//! over UDP (TCP when an answer is truncated), for A and AAAA records. The binary is linked
//! statically, and a static glibc resolves names only through shared NSS modules that an empty
//! root filesystem (a `scratch` image, a chroot) does not hold; this stub resolver needs nothing
//! but the two files, read afresh on each lookup like the C library does.
//!
//! It is a stub: recursion is the name server's job. Answers are matched by id, source and the
//! echoed question, and only A (for the A query) and AAAA (for the AAAA query) records of class
//! IN are taken, whatever their owner name (a CNAME chain the server followed), as musl does.
//! Every address still goes through the caller's vetting: this module only finds candidates.

use std::fs;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

const HOSTS: &str = "/etc/hosts";
const RESOLV_CONF: &str = "/etc/resolv.conf";

const TYPE_A: u16 = 1;
const TYPE_AAAA: u16 = 28;
const CLASS_IN: u16 = 1;

/// Why a lookup gave no addresses.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum LookupError {
    /// The deadline passed first.
    Timeout,
    /// The name does not exist, has no addresses, or no name server answered; the message says
    /// which, in words fit for the client that supplied the name.
    Failed(String),
}

/// Resolves `host` to socket addresses on `port`: an IP literal as is, then `/etc/hosts`, then
/// `localhost` names (RFC 6761) when the hosts file lacks them, then DNS. Blocking, bounded by
/// `deadline` (by resolv.conf's timeout and attempts when `None`).
pub(super) fn lookup(
    host: &str,
    port: u16,
    deadline: Option<Duration>,
) -> Result<Vec<SocketAddr>, LookupError> {
    let with_port = |ips: Vec<IpAddr>| {
        ips.into_iter()
            .map(|ip| SocketAddr::new(ip, port))
            .collect()
    };
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let Some(name) = normalize(host) else {
        return Err(LookupError::Failed(format!(
            "{host} is not a valid host name"
        )));
    };
    let from_hosts = hosts_lookup(&fs::read_to_string(HOSTS).unwrap_or_default(), &name);
    if !from_hosts.is_empty() {
        return Ok(with_port(from_hosts));
    }
    if name == "localhost" || name.ends_with(".localhost") {
        return Ok(with_port(vec![
            IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(Ipv6Addr::LOCALHOST),
        ]));
    }
    let conf = Conf::parse(&fs::read_to_string(RESOLV_CONF).unwrap_or_default());
    let until = Instant::now() + deadline.unwrap_or_else(|| conf.budget());
    // A name with a final dot is absolute: the search list does not apply.
    let absolute = host.ends_with('.');
    resolve(&conf, &name, absolute, until).map(with_port)
}

/// A host name in lower case without its final dot, or `None` when it is not one: ASCII letters,
/// digits, `-` and `_` in labels of 1 to 63 bytes, at most 253 bytes in all.
fn normalize(host: &str) -> Option<String> {
    let name = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    let valid = !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            (1..=63).contains(&label.len())
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        });
    valid.then_some(name)
}

/// The addresses `/etc/hosts` (its text) gives `name`, in file order.
fn hosts_lookup(text: &str, name: &str) -> Vec<IpAddr> {
    let mut found = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or_default();
        let mut fields = line.split_ascii_whitespace();
        let Some(Ok(ip)) = fields.next().map(str::parse::<IpAddr>) else {
            continue;
        };
        if fields.any(|alias| {
            alias
                .strip_suffix('.')
                .unwrap_or(alias)
                .eq_ignore_ascii_case(name)
        }) && !found.contains(&ip)
        {
            found.push(ip);
        }
    }
    found
}

/// What `/etc/resolv.conf` says, with the C library's defaults.
#[derive(Debug, PartialEq)]
struct Conf {
    nameservers: Vec<SocketAddr>,
    search: Vec<String>,
    ndots: usize,
    timeout: Duration,
    attempts: u32,
}

impl Conf {
    fn parse(text: &str) -> Conf {
        let mut conf = Conf {
            nameservers: Vec::new(),
            search: Vec::new(),
            ndots: 1,
            timeout: Duration::from_secs(5),
            attempts: 2,
        };
        for line in text.lines() {
            let mut fields = line.split_ascii_whitespace();
            match fields.next() {
                // At most three, like the C library; a zone index (`fe80::1%eth0`) is not kept.
                Some("nameserver") if conf.nameservers.len() < 3 => {
                    if let Some(Ok(ip)) = fields
                        .next()
                        .map(|f| f.split('%').next().unwrap_or(f).parse::<IpAddr>())
                    {
                        conf.nameservers.push(SocketAddr::new(ip, 53));
                    }
                }
                // The last `search` or `domain` line wins.
                Some("search" | "domain") => {
                    conf.search = fields.filter_map(normalize).take(6).collect();
                }
                Some("options") => {
                    for option in fields {
                        let number =
                            |prefix: &str| option.strip_prefix(prefix)?.parse::<u32>().ok();
                        if let Some(n) = number("ndots:") {
                            conf.ndots = n.min(15) as usize;
                        } else if let Some(n) = number("timeout:") {
                            conf.timeout = Duration::from_secs(u64::from(n.clamp(1, 30)));
                        } else if let Some(n) = number("attempts:") {
                            conf.attempts = n.clamp(1, 5);
                        }
                    }
                }
                _ => {}
            }
        }
        if conf.nameservers.is_empty() {
            conf.nameservers
                .push(SocketAddr::from((Ipv4Addr::LOCALHOST, 53)));
        }
        conf
    }

    /// The longest a lookup may take when the caller sets no deadline.
    fn budget(&self) -> Duration {
        self.timeout * self.attempts * u32::try_from(self.nameservers.len()).unwrap_or(3)
    }

    /// The names to ask for, in order: as given first when it has at least `ndots` dots, then
    /// with each search domain appended, then as given (when not tried first); only as given
    /// when it is `absolute` (written with a final dot).
    fn candidates(&self, name: &str, absolute: bool) -> Vec<String> {
        if absolute {
            return vec![name.to_owned()];
        }
        let absolute_first = name.matches('.').count() >= self.ndots;
        let mut names = Vec::with_capacity(self.search.len() + 1);
        if absolute_first {
            names.push(name.to_owned());
        }
        for domain in &self.search {
            let joined = format!("{name}.{domain}");
            if normalize(&joined).is_some() {
                names.push(joined);
            }
        }
        if !absolute_first {
            names.push(name.to_owned());
        }
        names
    }
}

/// Tries each candidate name in turn; the first with addresses wins.
fn resolve(
    conf: &Conf,
    name: &str,
    absolute: bool,
    until: Instant,
) -> Result<Vec<IpAddr>, LookupError> {
    let mut failure = LookupError::Failed(format!("{name} has no addresses"));
    for candidate in conf.candidates(name, absolute) {
        match query_addresses(conf, &candidate, until) {
            Ok(ips) if !ips.is_empty() => return Ok(ips),
            Ok(_) => {}
            Err(LookupError::Timeout) => return Err(LookupError::Timeout),
            Err(other) => failure = other,
        }
    }
    Err(failure)
}

/// One question in flight and what became of it.
struct Query {
    qtype: u16,
    packet: Vec<u8>,
    outcome: Option<Outcome>,
}

#[derive(Debug, PartialEq)]
enum Outcome {
    /// The name exists; these are its addresses of the asked type (maybe none).
    Addresses(Vec<IpAddr>),
    /// NXDOMAIN: the name does not exist.
    NoSuchName,
}

impl Query {
    fn new(name: &str, qtype: u16) -> Query {
        let mut id = [0u8; 2];
        let id = match getrandom::fill(&mut id) {
            Ok(()) => u16::from_be_bytes(id),
            // No randomness (the kernel's getrandom is missing): ids that at least differ;
            // answers are also matched on their question and arrive on a connected socket.
            Err(_) => {
                static NEXT: AtomicU16 = AtomicU16::new(1);
                NEXT.fetch_add(1, Ordering::Relaxed)
            }
        };
        Query {
            qtype,
            packet: encode_query(id, name, qtype),
            outcome: None,
        }
    }
}

/// Asks for A and AAAA records of `name`: each name server in turn, `attempts` rounds, both
/// questions at once over one UDP socket; a truncated answer is asked again over TCP. A, then
/// AAAA addresses (IPv4 first: many hosts that run bourse have no IPv6 route).
fn query_addresses(conf: &Conf, name: &str, until: Instant) -> Result<Vec<IpAddr>, LookupError> {
    let mut queries = [Query::new(name, TYPE_A), Query::new(name, TYPE_AAAA)];
    let mut unanswered = String::from("no name server answered");
    'rounds: for _ in 0..conf.attempts {
        for server in &conf.nameservers {
            if queries.iter().all(|q| q.outcome.is_some()) {
                break 'rounds;
            }
            let now = Instant::now();
            if now >= until {
                break 'rounds;
            }
            let window = now + conf.timeout.min(until - now);
            if let Err(e) = exchange(*server, &mut queries, window) {
                unanswered = format!("name server {server}: {e}");
            }
        }
    }
    let mut ips = Vec::new();
    let mut exists = false;
    for query in &queries {
        if let Some(Outcome::Addresses(found)) = &query.outcome {
            exists = true;
            ips.extend(found);
        }
    }
    if !ips.is_empty()
        || exists
        || queries
            .iter()
            .any(|q| q.outcome == Some(Outcome::NoSuchName))
    {
        return Ok(ips);
    }
    if Instant::now() >= until {
        return Err(LookupError::Timeout);
    }
    // Which server failed how is for the operator's log, not for whoever supplied the URL.
    tracing::debug!(name, reason = unanswered, "outbound name lookup failed");
    Err(LookupError::Failed(format!("{name} did not resolve")))
}

/// Sends the unanswered queries to `server` and reads answers until each has one or `window`
/// ends. Answers that fail (SERVFAIL, REFUSED, malformed) leave their query for the next server.
fn exchange(server: SocketAddr, queries: &mut [Query], window: Instant) -> io::Result<()> {
    let local: SocketAddr = match server {
        SocketAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
        SocketAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let socket = UdpSocket::bind(local)?;
    socket.connect(server)?;
    for query in queries.iter().filter(|q| q.outcome.is_none()) {
        socket.send(&query.packet)?;
    }
    let mut waiting: Vec<bool> = queries.iter().map(|q| q.outcome.is_none()).collect();
    let mut buf = [0u8; 512];
    while waiting.contains(&true) {
        let left = window.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        socket.set_read_timeout(Some(left))?;
        let len = match socket.recv(&mut buf) {
            Ok(len) => len,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        for (query, waits) in queries.iter_mut().zip(waiting.iter_mut()) {
            if !*waits {
                continue;
            }
            let Some(answer) = decode_answer(&buf[..len], &query.packet, query.qtype) else {
                continue;
            };
            *waits = false;
            query.outcome = match answer {
                Answer::Done(outcome) => Some(outcome),
                Answer::Truncated => exchange_tcp(server, query, window),
                Answer::Failed => None,
            };
            break;
        }
    }
    Ok(())
}

/// The query again over TCP, for an answer too long for UDP.
fn exchange_tcp(server: SocketAddr, query: &Query, window: Instant) -> Option<Outcome> {
    let left = window.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return None;
    }
    let mut stream = TcpStream::connect_timeout(&server, left).ok()?;
    let len = u16::try_from(query.packet.len()).ok()?;
    let mut framed = len.to_be_bytes().to_vec();
    framed.extend_from_slice(&query.packet);
    stream.set_write_timeout(Some(remaining(window)?)).ok()?;
    stream.write_all(&framed).ok()?;
    let mut len = [0u8; 2];
    read_exact_by(&mut stream, &mut len, window)?;
    let mut answer = vec![0u8; usize::from(u16::from_be_bytes(len))];
    read_exact_by(&mut stream, &mut answer, window)?;
    match decode_answer(&answer, &query.packet, query.qtype)? {
        Answer::Done(outcome) => Some(outcome),
        Answer::Truncated | Answer::Failed => None,
    }
}

/// The time left until `window`, `None` once it has passed.
fn remaining(window: Instant) -> Option<Duration> {
    Some(window.saturating_duration_since(Instant::now())).filter(|left| !left.is_zero())
}

/// Fills `buf` from `stream` by `window`: each read waits only for the time still left, so a
/// server that trickles bytes cannot stretch the lookup.
fn read_exact_by(stream: &mut TcpStream, mut buf: &mut [u8], window: Instant) -> Option<()> {
    while !buf.is_empty() {
        stream.set_read_timeout(Some(remaining(window)?)).ok()?;
        match stream.read(buf) {
            Ok(0) => return None,
            Ok(n) => buf = &mut buf[n..],
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    Some(())
}

/// A query: header (the id, recursion desired, one question) and the question.
fn encode_query(id: u16, name: &str, qtype: u16) -> Vec<u8> {
    let mut packet = Vec::with_capacity(18 + name.len());
    packet.extend_from_slice(&id.to_be_bytes());
    packet.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in name.split('.') {
        // normalize() bounds every label at 63 bytes.
        packet.push(label.len() as u8);
        packet.extend_from_slice(label.as_bytes());
    }
    packet.push(0);
    packet.extend_from_slice(&qtype.to_be_bytes());
    packet.extend_from_slice(&CLASS_IN.to_be_bytes());
    packet
}

/// What an answer to one query says.
#[derive(Debug, PartialEq)]
enum Answer {
    Done(Outcome),
    /// TC set: ask again over TCP.
    Truncated,
    /// SERVFAIL, REFUSED or another error: ask the next server.
    Failed,
}

/// Reads `packet` as the answer to `query` (the bytes we sent), or `None` when it answers
/// something else or is malformed.
fn decode_answer(packet: &[u8], query: &[u8], qtype: u16) -> Option<Answer> {
    let header = packet.get(..12)?;
    let question = query.get(12..)?;
    let flags = u16::from_be_bytes([header[2], header[3]]);
    let same_id = header[..2] == query[..2];
    let is_response = flags & 0x8000 != 0;
    let opcode = (flags >> 11) & 0xf;
    let qdcount = u16::from_be_bytes([header[4], header[5]]);
    if !same_id || !is_response || opcode != 0 || qdcount != 1 {
        return None;
    }
    if !packet
        .get(12..12 + question.len())?
        .eq_ignore_ascii_case(question)
    {
        return None;
    }
    if flags & 0x0200 != 0 {
        return Some(Answer::Truncated);
    }
    match flags & 0xf {
        0 => {}
        3 => return Some(Answer::Done(Outcome::NoSuchName)),
        _ => return Some(Answer::Failed),
    }
    let ancount = u16::from_be_bytes([header[6], header[7]]);
    let mut at = 12 + question.len();
    let mut ips = Vec::new();
    for _ in 0..ancount {
        at = skip_name(packet, at)?;
        let fixed = packet.get(at..at + 10)?;
        let rtype = u16::from_be_bytes([fixed[0], fixed[1]]);
        let class = u16::from_be_bytes([fixed[2], fixed[3]]);
        let rdlen = usize::from(u16::from_be_bytes([fixed[8], fixed[9]]));
        let rdata = packet.get(at + 10..at + 10 + rdlen)?;
        at += 10 + rdlen;
        if class != CLASS_IN || rtype != qtype {
            continue;
        }
        match (rtype, rdata.len()) {
            (TYPE_A, 4) => ips.push(IpAddr::from(<[u8; 4]>::try_from(rdata).ok()?)),
            (TYPE_AAAA, 16) => ips.push(IpAddr::from(<[u8; 16]>::try_from(rdata).ok()?)),
            _ => return None,
        }
    }
    Some(Answer::Done(Outcome::Addresses(ips)))
}

/// The offset after the (possibly compressed) name at `at`. A compression pointer ends a name,
/// so nothing here follows pointers and no loop can form.
fn skip_name(packet: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let len = *packet.get(at)?;
        match len {
            0 => return Some(at + 1),
            1..=63 => at += 1 + usize::from(len),
            0xc0..=0xff => {
                packet.get(at + 1)?;
                return Some(at + 2);
            }
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests;
