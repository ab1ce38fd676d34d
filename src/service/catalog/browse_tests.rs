//! Unit tests of `browse.rs`.
use super::*;
use crate::service::catalog::matches::CHANGES_MAX;

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn index() -> BrowseIndex {
    BrowseIndex {
        entries: RwLock::new(Entries::default()),
        generation: AtomicU64::new(0),
        fts_cache: Mutex::new(HashMap::new()),
        resolving: Mutex::new(HashMap::new()),
        changes: Mutex::new(Changes::default()),
        lookups: tokio::sync::Semaphore::new(2),
        totals: Mutex::new(HashMap::new()),
        walks: Mutex::default(),
        flushes: AtomicU64::new(0),
        category_index: HashMap::new(),
        vertical_index: HashMap::new(),
    }
}

fn random_entry(rng: &mut Rng, seq: i64) -> Entry {
    Entry {
        seq,
        price_cents: 100 * rng.below(20) as i64,
        rating_sum: rng.below(50) as u32,
        rating_count: rng.below(10) as u32,
        purchase_count: rng.below(5) as u32,
        view_count: rng.below(5) as u32,
        quality: rng.below(8) as f32 / 2.0,
        reputation: rng.below(8) as f32 / 2.0,
        category: rng.below(4) as u16,
        vertical: rng.below(6) as u16,
        listing_type: rng.below(3) as u8,
        active: rng.below(10) != 0,
        sample: rng.below(20) == 0,
    }
}

/// What a browse must answer, the slow way: filter everything, sort everything; `found` is what the query's search (if any) matches.
fn reference(index: &BrowseIndex, query: &Query, found: Option<&[i64]>) -> (Vec<i64>, usize) {
    let entries = index.entries.read().unwrap();
    let mut matching: Vec<&Entry> = entries
        .list
        .iter()
        .filter(|e| keep(e, &query.filters) && found.is_none_or(|f| f.contains(&e.seq)))
        .collect();
    matching.sort_by(|a, b| compare(a, b, query.sort));
    let page = matching
        .iter()
        .skip(query.offset)
        .take(query.limit)
        .map(|e| e.seq)
        .collect();
    (page, matching.len())
}

#[test]
fn kept_orders_answer_what_a_full_sort_answers_through_edits_and_view_counts() {
    let conn = Connection::open_in_memory().unwrap();
    let index = index();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    // Built at once, as at start; then moved one by one and in batches (see the end of a round).
    let list = (1..=3000).map(|seq| random_entry(&mut rng, seq)).collect();
    *index.entries.write().unwrap() = Entries::new(list);
    let sorts = [
        Sort::Recent,
        Sort::Popular,
        Sort::PriceAsc,
        Sort::PriceDesc,
        Sort::Quality,
        Sort::Trust,
    ];
    for round in 0..40 {
        for sort in sorts {
            let query = Query {
                filters: Filters {
                    fts: None,
                    category: (rng.below(2) == 0).then(|| rng.below(4) as u16),
                    categories: None,
                    vertical: (rng.below(4) == 0).then(|| rng.below(6) as u16),
                    listing_type: None,
                    samples: [Samples::Exclude, Samples::Include, Samples::Only]
                        [rng.below(3) as usize],
                    price: [Price::All, Price::Paid, Price::Free][rng.below(3) as usize],
                    min_rating_tenths: (rng.below(3) == 0).then(|| 10 * rng.below(5) as i64),
                },
                sort,
                limit: 1 + rng.below(50) as usize,
                offset: rng.below(200) as usize,
            };
            // The query, then the same filters and sort at other offsets: from the kept walk
            // when as deep as it went, else walked deeper.
            let at_offsets = |rng: &mut Rng, query: &Query, found: Option<&[i64]>| {
                for offset in [query.offset, rng.below(400) as usize, 0, 2 * query.offset] {
                    let query = Query {
                        offset,
                        ..query.clone()
                    };
                    assert_eq!(
                        index.query(&conn, &query).unwrap(),
                        reference(&index, &query, found),
                        "round {round}, {query:?}"
                    );
                }
            };
            at_offsets(&mut rng, &query, None);
            // A rare search (a few dozen matches) takes the path that visits matches only; a
            // common one (one listing in ten) walks the catalogue and tests each entry.
            let generation = index.generation.load(AtomicOrdering::SeqCst);
            for (kind, count) in [("rare", 40), ("common", 300), ("frequent", 1_500)] {
                // A word of its own: within one generation a word always matches the same.
                let word = format!("{kind}{round}{sort:?}");
                let found: Vec<i64> = (0..count).map(|_| 1 + rng.below(3000) as i64).collect();
                // Kept by position: seqs run from 1 without gaps here.
                let positions = found.iter().map(|seq| seq - 1).collect();
                let matches = Matches::new(positions, 3000, 3040);
                assert_eq!(matches!(matches, Matches::Few(_)), kind == "rare");
                index.fts_cache.lock().unwrap().insert(
                    word.clone(),
                    Kept {
                        generation,
                        matches: Arc::new(matches),
                    },
                );
                let search = Query {
                    filters: Filters {
                        fts: Some(word),
                        ..query.filters.clone()
                    },
                    ..query.clone()
                };
                at_offsets(&mut rng, &search, Some(&found));
            }
        }
        // Edits move entries in every kept order; new listings join them; views move the
        // popular order.
        let edits: Vec<Entry> = (0..20)
            .map(|_| {
                let seq = 1 + rng.below(3000) as i64;
                random_entry(&mut rng, seq)
            })
            .collect();
        let next = 3001 + round;
        let mut entries = index.entries.write().unwrap();
        if round % 2 == 0 {
            entries.upsert(&edits);
        } else {
            for edit in &edits {
                entries.upsert(std::slice::from_ref(edit));
            }
        }
        entries.upsert(&[random_entry(&mut rng, next)]);
        // One listing's views, or many (a repeated seq among them, as two flushes would).
        let views: Vec<(i64, i64)> = (0..if round % 2 == 0 { 1 } else { 30 })
            .map(|_| (1 + rng.below(3000) as i64, 1 + rng.below(4) as i64))
            .collect();
        entries.add_views(&views);
        drop(entries);
        index.generation.fetch_add(1, AtomicOrdering::SeqCst);
        // A view flush within a generation moves the popular order under its kept walks.
        let popular = Query {
            filters: Filters::none(),
            sort: Sort::Popular,
            limit: 50,
            offset: rng.below(100) as usize,
        };
        assert_eq!(
            index.query(&conn, &popular).unwrap(),
            reference(&index, &popular, None)
        );
        // The second of the whole popular order goes first (with as many purchases as the
        // first, as most of the first ones have): the first page changes.
        let whole = Query {
            limit: 4000,
            offset: 0,
            ..popular.clone()
        };
        let order = reference(&index, &whole, None).0;
        let (lead, next) = {
            let entries = index.entries.read().unwrap();
            let entry = |seq| entries.list[entries.at(seq).unwrap()];
            (entry(order[0]), entry(order[1]))
        };
        let lift = i64::from(lead.view_count) - i64::from(next.view_count) + 1;
        index.add_views(&[(order[1], lift)]);
        let first_page = Query {
            offset: 0,
            ..popular.clone()
        };
        let after = index.query(&conn, &first_page).unwrap();
        if lead.purchase_count == next.purchase_count {
            assert_eq!(after.0[0], order[1], "round {round}: after a view flush");
        }
        assert_eq!(after, reference(&index, &first_page, None));
        assert_eq!(
            index.query(&conn, &popular).unwrap(),
            reference(&index, &popular, None),
            "round {round}: after a view flush"
        );
    }
}

#[test]
fn listings_are_found_by_seq_exactly_when_they_exist() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    // Gaps in the seqs, as never-committed listings leave.
    let list: Vec<Entry> = (1..5_000i64)
        .filter(|seq| seq % 7 != 0)
        .map(|seq| random_entry(&mut rng, seq))
        .collect();
    let entries = Entries::new(list.clone());
    for seq in -3..5_100 {
        let expected = list.binary_search_by_key(&seq, |e| e.seq).ok();
        assert_eq!(entries.at(seq), expected, "seq {seq}");
    }
    assert_eq!(Entries::default().at(1), None);
}

/// The flags test of a browse's filters says what `keep` says, for any entry and filters,
/// codes past what the flags hold included.
#[test]
fn the_flags_test_admits_exactly_what_keep_keeps() {
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for _ in 0..20_000 {
        let mut entry = random_entry(&mut rng, 1);
        entry.category = [0, 3, 30, 31, 32, 700][rng.below(6) as usize];
        entry.vertical = [0, 5, 254, 255, 256, u16::MAX][rng.below(6) as usize];
        entry.price_cents = [-5, 0, 1, 500][rng.below(4) as usize];
        entry.rating_sum = [0, 1, 7, 35, 49, 50, u32::MAX][rng.below(7) as usize];
        let pick = |rng: &mut Rng, codes: &[u16]| codes[rng.below(codes.len() as u64) as usize];
        let filters = Filters {
            fts: None,
            category: (rng.below(2) == 0).then(|| pick(&mut rng, &[0, 3, 31, 32, 700])),
            categories: (rng.below(3) == 0).then(|| {
                (0..rng.below(3))
                    .map(|_| pick(&mut rng, &[0, 3, 30, 31, 40]))
                    .collect()
            }),
            vertical: (rng.below(2) == 0).then(|| pick(&mut rng, &[0, 5, 255, 256, u16::MAX])),
            listing_type: (rng.below(2) == 0).then(|| rng.below(3) as u8),
            samples: [Samples::Exclude, Samples::Include, Samples::Only][rng.below(3) as usize],
            price: [Price::All, Price::Paid, Price::Free][rng.below(3) as usize],
            min_rating_tenths: (rng.below(2) == 0)
                .then(|| [-10, 0, 10, 35, 49, 50, 62, 63, 500][rng.below(9) as usize]),
        };
        let admit = Admit::new(&filters);
        let kept = keep(&entry, &filters);
        let admitted = admit.admits(crate::service::catalog::entries::flags(&entry));
        assert!(
            kept <= admitted,
            "the flags refused what keep keeps: {entry:?} {filters:?}"
        );
        assert_eq!(
            admitted && (!admit.recheck || kept),
            kept,
            "{entry:?} {filters:?}"
        );
    }
}

/// A word's kept matches follow the catalogue's writes: a listing that gains or loses the word,
/// and a new one, are asked about alone (the patch), and the answer is what a fresh lookup gives.
#[test]
fn kept_word_matches_follow_edits_and_new_listings() {
    let conn = Connection::open_in_memory().unwrap();
    store::search_fixture::create(&conn);
    let index = index();
    let row = |seq: i64| IndexRow::plain(seq, 100);
    let title = |seq: i64, text: &str| store::search_fixture::set(&conn, seq, text);
    for seq in 1..=200 {
        title(
            seq,
            if seq % 2 == 0 {
                "red camera"
            } else {
                "blue lamp"
            },
        );
    }
    index.replace_all(&(1..=200).map(row).collect::<Vec<_>>());
    let search = |word: &str| {
        let query = Query {
            filters: Filters {
                fts: fts_query(word),
                ..Filters::none()
            },
            sort: Sort::Recent,
            limit: 300,
            offset: 0,
        };
        index.query(&conn, &query).unwrap()
    };
    let (page, total) = search("red");
    assert_eq!(total, 100);
    assert_eq!(page.first(), Some(&200));
    // Edits: 200 loses the word, 3 gains it; a new listing 201 has it.
    title(200, "green lamp");
    title(3, "red kettle");
    title(201, "red sofa");
    index.upsert_rows(&[row(200), row(3)]);
    index.upsert_rows(&[row(201)]);
    let (page, total) = search("red");
    assert_eq!(total, 101);
    assert_eq!(&page[..2], &[201, 198]);
    assert!(page.contains(&3) && !page.contains(&200));
    // The same as a lookup anew.
    index.fts_cache.lock().unwrap().clear();
    assert_eq!(search("red"), (page, total));
    // Past what the log holds, a word is looked up anew, still right.
    let many: Vec<IndexRow> = (1..=201).map(row).collect();
    for _ in 0..=CHANGES_MAX / 201 {
        index.upsert_rows(&many);
    }
    title(2, "plain");
    index.upsert_rows(&[row(2)]);
    assert_eq!(search("red").1, 100);
}

#[test]
fn a_walk_from_a_skip_collects_what_a_walk_from_the_start_has_there() {
    // How a page deeper than a kept walk can hold is walked: skipping to it.
    let mut rng = Rng(0x0bad_cafe_f00d_beef);
    let list = (1..=2000).map(|seq| random_entry(&mut rng, seq)).collect();
    let entries = Entries::new(list);
    for sort in Sort::ALL.iter().copied() {
        for price in [Price::All, Price::Paid, Price::Free] {
            let filters = Filters {
                price,
                ..Filters::none()
            };
            let admit = Admit::new(&filters);
            let admits = |flags: u32, _at: usize| admit.admits(flags);
            let all = walks::walk_to(&entries, sort, (0, 5000), &admit, &admits);
            for (skip, depth) in [(0, 10), (7, 50), (300, 350), (1990, 2100), (5000, 5100)] {
                let part = walks::walk_to(&entries, sort, (skip, depth), &admit, &admits);
                let expected = all.get(skip..depth.min(all.len())).unwrap_or_default();
                assert_eq!(part, expected, "{sort:?} {price:?} {skip}..{depth}");
            }
        }
    }
}
