//! Black-box tests: the real server on port 0 with a temp data dir.
