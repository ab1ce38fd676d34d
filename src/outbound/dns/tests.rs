use std::net::TcpListener;
use std::thread;

use super::*;

const V4: [u8; 4] = [93, 184, 216, 34];
const V6: [u8; 16] = [
    0x26, 0x06, 0x28, 0, 0x02, 0x20, 0, 0x01, 0, 0, 0, 0, 0, 0, 0, 0x10,
];

/// An answer to `query`: the flags and rcode given, then `records` (type, rdata), each owned by
/// a pointer to the question's name.
fn respond(query: &[u8], flags: u16, records: &[(u16, &[u8])]) -> Vec<u8> {
    let mut packet = query[..2].to_vec();
    packet.extend_from_slice(&(0x8180 | flags).to_be_bytes());
    packet.extend_from_slice(&[0, 1]);
    packet.extend_from_slice(&u16::try_from(records.len()).unwrap().to_be_bytes());
    packet.extend_from_slice(&[0, 0, 0, 0]);
    packet.extend_from_slice(&query[12..]);
    for (rtype, rdata) in records {
        packet.extend_from_slice(&[0xc0, 0x0c]);
        packet.extend_from_slice(&rtype.to_be_bytes());
        packet.extend_from_slice(&[0, 1, 0, 0, 0, 60]);
        packet.extend_from_slice(&u16::try_from(rdata.len()).unwrap().to_be_bytes());
        packet.extend_from_slice(rdata);
    }
    packet
}

fn qtype_of(query: &[u8]) -> u16 {
    u16::from_be_bytes([query[query.len() - 4], query[query.len() - 3]])
}

/// A name server on loopback UDP that answers each query with `answer(query)` (no answer for
/// `None`), for at most five seconds.
fn udp_server(answer: impl Fn(&[u8]) -> Option<Vec<u8>> + Send + 'static) -> SocketAddr {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = socket.local_addr().unwrap();
    thread::spawn(move || {
        let end = Instant::now() + Duration::from_secs(5);
        let mut buf = [0u8; 512];
        while Instant::now() < end {
            socket
                .set_read_timeout(Some(Duration::from_millis(100)))
                .unwrap();
            if let Ok((len, from)) = socket.recv_from(&mut buf)
                && let Some(reply) = answer(&buf[..len])
            {
                let _ = socket.send_to(&reply, from);
            }
        }
    });
    addr
}

fn conf(nameservers: Vec<SocketAddr>) -> Conf {
    Conf {
        nameservers,
        search: Vec::new(),
        ndots: 1,
        timeout: Duration::from_millis(500),
        attempts: 1,
    }
}

#[test]
fn names_are_checked_and_lowered() {
    assert_eq!(
        normalize("Seller.Example.COM.").as_deref(),
        Some("seller.example.com")
    );
    assert_eq!(
        normalize("_svc.a-b.example").as_deref(),
        Some("_svc.a-b.example")
    );
    for bad in [
        "",
        ".",
        "a..b",
        "exa mple.com",
        "ex@mple.com",
        "é.example",
        &"a".repeat(64),
    ] {
        assert_eq!(normalize(bad), None, "{bad:?}");
    }
    assert_eq!(normalize(&["a"; 127].join(".")).map(|n| n.len()), Some(253));
    assert_eq!(normalize(&["a"; 128].join(".")), None);
}

#[test]
fn hosts_file_lines_comments_and_aliases() {
    let text = "# comment\n127.0.0.1 localhost\n10.0.0.7\tseller.test  Seller-Alias.test. # box\n\
                ::1 localhost ip6-localhost\nnot-an-ip seller.test\n10.0.0.8 seller.test\n";
    assert_eq!(
        hosts_lookup(text, "localhost"),
        vec![
            IpAddr::from([127, 0, 0, 1]),
            IpAddr::V6(Ipv6Addr::LOCALHOST)
        ]
    );
    assert_eq!(
        hosts_lookup(text, "seller.test"),
        vec![IpAddr::from([10, 0, 0, 7]), IpAddr::from([10, 0, 0, 8])]
    );
    assert_eq!(
        hosts_lookup(text, "seller-alias.test"),
        vec![IpAddr::from([10, 0, 0, 7])]
    );
    assert!(hosts_lookup(text, "box").is_empty());
    assert!(hosts_lookup("", "seller.test").is_empty());
}

#[test]
fn resolv_conf_keeps_three_servers_the_last_search_and_bounded_options() {
    let conf = Conf::parse(
        "# generated\nnameserver 10.0.0.2\nnameserver fe80::1%eth0\nnameserver bogus\n\
         nameserver 10.0.0.3\nnameserver 10.0.0.4\ndomain old.example\n\
         search corp.example Lab.Example\noptions ndots:2 timeout:99 attempts:0 rotate\n",
    );
    assert_eq!(
        conf.nameservers,
        vec![
            "10.0.0.2:53".parse().unwrap(),
            "[fe80::1]:53".parse().unwrap(),
            "10.0.0.3:53".parse().unwrap()
        ]
    );
    assert_eq!(conf.search, ["corp.example", "lab.example"]);
    assert_eq!(
        (conf.ndots, conf.timeout, conf.attempts),
        (2, Duration::from_secs(30), 1)
    );

    let empty = Conf::parse("");
    assert_eq!(empty.nameservers, vec!["127.0.0.1:53".parse().unwrap()]);
    assert_eq!(
        (empty.ndots, empty.timeout, empty.attempts),
        (1, Duration::from_secs(5), 2)
    );
    assert_eq!(empty.budget(), Duration::from_secs(10));
}

#[test]
fn search_domains_follow_ndots() {
    let mut conf = Conf::parse("search corp.example lab.example\n");
    assert_eq!(
        conf.candidates("db", false),
        ["db.corp.example", "db.lab.example", "db"]
    );
    assert_eq!(
        conf.candidates("api.stripe.com", false),
        [
            "api.stripe.com",
            "api.stripe.com.corp.example",
            "api.stripe.com.lab.example"
        ]
    );
    conf.ndots = 5;
    assert_eq!(
        conf.candidates("api.stripe.com", false)[0],
        "api.stripe.com.corp.example"
    );
    // Written with a final dot: absolute, the search list does not apply.
    assert_eq!(conf.candidates("db", true), ["db"]);
}

#[test]
fn answers_are_matched_to_their_query() {
    let query = encode_query(0x1234, "seller.example", TYPE_A);
    assert_eq!(query[..4], [0x12, 0x34, 0x01, 0x00]);
    assert_eq!(query.len(), 12 + 16 + 4);

    let ok = respond(&query, 0, &[(TYPE_A, &V4), (TYPE_AAAA, &V6)]);
    assert_eq!(
        decode_answer(&ok, &query, TYPE_A),
        Some(Answer::Done(Outcome::Addresses(vec![IpAddr::from(V4)])))
    );
    // A CNAME the server followed: the A record belongs to another name; it counts.
    let mut cname = respond(
        &query,
        0,
        &[(5, &[3, b'c', b'd', b'n', 0xc0, 0x13]), (TYPE_A, &V4)],
    );
    assert_eq!(
        decode_answer(&cname, &query, TYPE_A),
        Some(Answer::Done(Outcome::Addresses(vec![IpAddr::from(V4)])))
    );
    // A different id, a question for another name, a query instead of an answer: not ours.
    let mut other_id = ok.clone();
    other_id[1] ^= 1;
    assert_eq!(decode_answer(&other_id, &query, TYPE_A), None);
    let other_name = respond(
        &encode_query(0x1234, "seller.example2", TYPE_A),
        0,
        &[(TYPE_A, &V4)],
    );
    assert_eq!(decode_answer(&other_name, &query, TYPE_A), None);
    assert_eq!(decode_answer(&query, &query, TYPE_A), None);
    // The echoed question may differ in case.
    let mut shouting = ok.clone();
    shouting[13..19].make_ascii_uppercase();
    assert!(matches!(
        decode_answer(&shouting, &query, TYPE_A),
        Some(Answer::Done(_))
    ));

    assert_eq!(
        decode_answer(&respond(&query, 0x0200, &[]), &query, TYPE_A),
        Some(Answer::Truncated)
    );
    assert_eq!(
        decode_answer(&respond(&query, 3, &[]), &query, TYPE_A),
        Some(Answer::Done(Outcome::NoSuchName))
    );
    assert_eq!(
        decode_answer(&respond(&query, 2, &[]), &query, TYPE_A),
        Some(Answer::Failed)
    );
    assert_eq!(
        decode_answer(&respond(&query, 5, &[]), &query, TYPE_A),
        Some(Answer::Failed)
    );
    assert_eq!(
        decode_answer(&respond(&query, 0, &[]), &query, TYPE_A),
        Some(Answer::Done(Outcome::Addresses(Vec::new())))
    );

    // Malformed: cut anywhere, a bad label length, an A record of the wrong size.
    for end in 0..ok.len() {
        if end != ok.len() - 16 - 12 {
            assert_eq!(
                decode_answer(&ok[..end], &query, TYPE_A),
                None,
                "cut at {end}"
            );
        }
    }
    cname[12 + 20] = 0x80;
    assert_eq!(decode_answer(&cname, &query, TYPE_A), None);
    assert_eq!(
        decode_answer(&respond(&query, 0, &[(TYPE_A, &V6)]), &query, TYPE_A),
        None
    );
}

#[test]
fn both_record_types_come_back_ipv4_first() {
    let server = udp_server(|q| {
        Some(match qtype_of(q) {
            TYPE_A => respond(q, 0, &[(TYPE_A, &V4)]),
            _ => respond(q, 0, &[(TYPE_AAAA, &V6)]),
        })
    });
    let until = Instant::now() + Duration::from_secs(2);
    assert_eq!(
        resolve(&conf(vec![server]), "seller.example", false, until),
        Ok(vec![IpAddr::from(V4), IpAddr::from(V6)])
    );
}

#[test]
fn a_silent_or_failing_server_passes_to_the_next() {
    let silent = udp_server(|_| None);
    let failing = udp_server(|q| Some(respond(q, 2, &[])));
    let good = udp_server(|q| Some(respond(q, 0, &[(TYPE_A, &V4)])));
    let started = Instant::now();
    let ips = resolve(
        &conf(vec![silent, failing, good]),
        "seller.example",
        false,
        started + Duration::from_secs(3),
    );
    assert_eq!(ips, Ok(vec![IpAddr::from(V4)]));
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[test]
fn missing_names_try_the_search_list_then_fail() {
    let server = udp_server(|q| {
        let asked_corp = q.windows(4).any(|w| w == b"corp");
        Some(if asked_corp && qtype_of(q) == TYPE_A {
            respond(q, 0, &[(TYPE_A, &V4)])
        } else if asked_corp {
            respond(q, 0, &[])
        } else {
            respond(q, 3, &[])
        })
    });
    let mut conf = conf(vec![server]);
    conf.search = vec!["lab.example".into(), "corp.example".into()];
    let until = Instant::now() + Duration::from_secs(2);
    assert_eq!(
        resolve(&conf, "db", false, until),
        Ok(vec![IpAddr::from(V4)])
    );
    conf.search = vec!["lab.example".into()];
    assert!(matches!(
        resolve(&conf, "db", false, until),
        Err(LookupError::Failed(_))
    ));
}

#[test]
fn the_deadline_bounds_a_lookup() {
    let silent = udp_server(|_| None);
    let mut conf = conf(vec![silent]);
    conf.timeout = Duration::from_secs(5);
    conf.attempts = 3;
    let started = Instant::now();
    let result = resolve(
        &conf,
        "seller.example",
        false,
        started + Duration::from_millis(300),
    );
    assert_eq!(result, Err(LookupError::Timeout));
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[test]
fn a_truncated_answer_is_asked_again_over_tcp() {
    // UDP and TCP on the same port number, as a name server listens.
    let (udp, tcp) = (0..20)
        .find_map(|_| {
            let udp = UdpSocket::bind("127.0.0.1:0").ok()?;
            let tcp = TcpListener::bind(udp.local_addr().ok()?).ok()?;
            Some((udp, tcp))
        })
        .expect("a free port for both UDP and TCP");
    let addr = udp.local_addr().unwrap();
    thread::spawn(move || {
        let mut buf = [0u8; 512];
        udp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        for _ in 0..2 {
            if let Ok((len, from)) = udp.recv_from(&mut buf) {
                let q = &buf[..len];
                let reply = if qtype_of(q) == TYPE_A {
                    respond(q, 0x0200, &[])
                } else {
                    respond(q, 0, &[])
                };
                let _ = udp.send_to(&reply, from);
            }
        }
    });
    thread::spawn(move || {
        let (mut stream, _) = tcp.accept().unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut len = [0u8; 2];
        stream.read_exact(&mut len).unwrap();
        let mut q = vec![0u8; usize::from(u16::from_be_bytes(len))];
        stream.read_exact(&mut q).unwrap();
        let many: Vec<[u8; 4]> = (0..40u8).map(|i| [10, 1, 2, i]).collect();
        let records: Vec<(u16, &[u8])> = many.iter().map(|ip| (TYPE_A, &ip[..])).collect();
        let reply = respond(&q, 0, &records);
        let mut framed = u16::try_from(reply.len()).unwrap().to_be_bytes().to_vec();
        framed.extend_from_slice(&reply);
        stream.write_all(&framed).unwrap();
    });
    let ips = resolve(
        &conf(vec![addr]),
        "big.example",
        false,
        Instant::now() + Duration::from_secs(3),
    )
    .unwrap();
    assert_eq!(ips.len(), 40);
    assert_eq!(ips[39], IpAddr::from([10, 1, 2, 39]));
}

#[test]
fn literals_and_localhost_need_no_files() {
    assert_eq!(
        lookup("192.0.2.1", 8443, None),
        Ok(vec!["192.0.2.1:8443".parse().unwrap()])
    );
    assert_eq!(
        lookup("::1", 80, None),
        Ok(vec!["[::1]:80".parse().unwrap()])
    );
    let local = lookup("app.localhost", 80, Some(Duration::from_secs(1))).unwrap();
    assert!(local.iter().all(|a| a.ip().is_loopback()) && !local.is_empty());
    assert!(matches!(
        lookup("bad name", 80, None),
        Err(LookupError::Failed(_))
    ));
}

#[test]
fn a_trickling_tcp_answer_cannot_stretch_the_deadline() {
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = tcp.local_addr().unwrap();
    thread::spawn(move || {
        let (mut stream, _) = tcp.accept().unwrap();
        // One byte every 100 ms, for longer than the lookup may take.
        for _ in 0..40 {
            if stream.write_all(&[0]).is_err() {
                break;
            }
            thread::sleep(Duration::from_millis(100));
        }
    });
    let started = Instant::now();
    let query = Query::new("slow.example", TYPE_A);
    assert_eq!(
        exchange_tcp(addr, &query, started + Duration::from_millis(400)),
        None
    );
    assert!(started.elapsed() < Duration::from_millis(1500));
}
