//! MCP over raw HTTP, and the official Python SDK end to end (being written).
