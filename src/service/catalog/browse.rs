//! The in-memory browse index: every filter and sort of `GET /api/marketplace/listings` runs
//! here, over one compact entry per listing, so a browse is one pass over memory plus a fetch
//! of the page's rows by `seq`.
//!
//! Why: SQLite answers a single filter+sort quickly with the right index, but the spec's
//! combinations (nine filters × six sorts) and an exact `total` for each would need an index
//! per combination and still scan for counts (a `min_rating` count took 107 ms at 100k
//! listings). A linear pass over ~72-byte entries counts and selects any combination in well
//! under a millisecond at 100k listings (~7 MB of memory), and stays exact.
//!
//! A page costs what its page costs, not what the catalogue holds: each sort but `recent` keeps
//! an order of the entries (4 bytes per listing per sort, built with the entries and kept in
//! step with writes: `entries.rs`), which a browse walks until it has its page (or twice what
//! was walked before for the same filters, kept for the next pages: `walks.rs`); `recent`
//! walks the entries themselves; a rare search visits its matches only. A total without a search is summed over the census of
//! entry flags (exact after every write); a search's total is counted once per filter set and
//! catalogue write, then cached. Measured with `examples/bench` (README, Performance).
//!
//! Full-text search stays in SQLite FTS5. The rowids matching a search expression are kept as
//! [`Matches`] (the list of them when few, else a bitset over `seq`), valid until the next
//! catalogue write.
//!
//! Consistency: the index is updated right after each committed listing write (the single
//! writer serializes them), so a browse may lag a concurrent write by that instant; rows fetched
//! for a page are re-checked for `active`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex, RwLock};

use rusqlite::Connection;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::request::catalog::Browse;
use crate::service::App;
pub use crate::service::catalog::entries::Sort;
use crate::service::catalog::entries::{Entries, Entry, compare, saturate};
use crate::service::catalog::matches::Matches;
use crate::service::catalog::view::{ListingView, write_listing_canonical};
use crate::service::taxonomy::Taxonomy;
use crate::service::trust::provenance::CanonicalMembers;
use crate::store::Store;
use crate::store::agents::AgentRow;
use crate::store::listings::{self as store, IndexRow, ListingRow};

/// The sample mode, price filter and listing type of a browse (closed choices read at the
/// edge); a listing type's index form is its position (`as u8`).
pub use crate::request::catalog::{ListingType, Price, Samples};
pub use crate::service::catalog::filters::Filters;
use crate::service::catalog::filters::{Admit, keep};
use crate::service::catalog::matches::Changes;

/// A browse request: filters, sort and page.
#[derive(Clone, Debug)]
pub struct Query {
    pub filters: Filters,
    pub sort: Sort,
    pub limit: usize,
    pub offset: usize,
}

/// A search's matches as kept, valid for one generation of the index.
struct Kept {
    generation: u64,
    matches: Arc<Matches>,
}

/// A search with at most this many matches is not kept as a walk (`walks.rs`): selecting them
/// again costs less than the room it would take.
const FEW_MATCHES_TO_KEEP: usize = 1_000;

/// Most distinct search expressions (and filter sets) whose results are kept at once.
const CACHE_MAX: usize = 512;

/// Most bytes of kept word matches, at least (room for 64 bitsets is kept however large the
/// catalogue). A rare word is a list of its matches (4 bytes each); a common one is a bitset
/// over `seq` (125 KB at a million listings).
const FTS_CACHE_BYTES: usize = 8 << 20;

/// The index. Cheap to share behind an `Arc`.
pub struct BrowseIndex {
    entries: RwLock<Entries>,
    generation: AtomicU64,
    fts_cache: Mutex<HashMap<String, Kept>>,
    /// The words being looked up now, each with a lock its lookup holds: a request for the same
    /// word waits for that lookup instead of making its own (a common word takes FTS5 tens of
    /// milliseconds at a million listings, and a burst asks for it from every connection).
    resolving: Mutex<HashMap<String, Arc<Mutex<()>>>>,
    /// The positions each recent generation changed, so a word's kept matches are brought up to
    /// date by asking FTS5 about those listings only, rather than looked up anew after every
    /// catalogue write (a common word takes seconds at 10M listings).
    changes: Mutex<Changes>,
    /// Word lookups off the reader threads, at most [`words::ASIDE`] at once (`words.rs`).
    lookups: tokio::sync::Semaphore,
    /// Totals per filter set, valid for one generation.
    totals: Mutex<HashMap<Filters, (u64, usize)>>,
    /// The matches of recent filter sets in their sorts' orders, as deep as asked (`walks.rs`).
    walks: Mutex<walks::Walks>,
    /// View count flushes recorded, which move the popular order within a generation.
    flushes: AtomicU64,
    category_index: HashMap<String, u16>,
    vertical_index: HashMap<String, u16>,
}

impl BrowseIndex {
    /// Loads every listing's entry.
    ///
    /// # Errors
    /// Database failure.
    pub fn load(conn: &Connection, taxonomy: &Taxonomy) -> Result<BrowseIndex> {
        let mut index = BrowseIndex::empty(taxonomy);
        // At start the entries are read in one pass and the orders built once, without the
        // per-write upkeep.
        let mut list = Vec::with_capacity(usize::try_from(store::max_seq(conn)?).unwrap_or(0));
        store::each_index_row(conn, |row| list.push(index.entry(&row)))?;
        list.shrink_to_fit();
        index.entries = RwLock::new(Entries::new(list));
        Ok(index)
    }

    /// Loads every listing's entry as [`BrowseIndex::load`] does, from the snapshot at
    /// `snapshot` when it is this catalogue's (brought up to date: [`snapshot`]), else by
    /// reading the rows: on two of `store`'s connections at once, each half of the `seq`s in its
    /// own read transaction (reading and decoding the rows is most of what start-up costs).
    /// When the two saw different catalogues (a listing written in between by another
    /// process), the rows are read again on one connection. Answers with the index the change
    /// counter a fresh snapshot should be written as of ([`BrowseIndex::save_snapshot`]), when
    /// one should.
    ///
    /// # Errors
    /// Database failure.
    pub fn load_from(
        store: &Store,
        taxonomy: &Taxonomy,
        snapshot: Option<&std::path::Path>,
    ) -> Result<(BrowseIndex, Option<i64>)> {
        let started = std::time::Instant::now();
        let mut index = BrowseIndex::empty(taxonomy);
        let restored = match snapshot {
            Some(path) => snapshot::restore(&index, store, path, &snapshot::fingerprint(taxonomy))?,
            None => None,
        };
        let (from, list, save) = match restored {
            Some(restored) => {
                let save = restored.stale.then_some(restored.seen);
                ("snapshot", restored.list, save)
            }
            None => {
                let (list, seen) = index.read_rows(store)?;
                let worth = snapshot.is_some() && list.len() >= snapshot::WORTH;
                ("rows", list, worth.then_some(seen))
            }
        };
        let (listings, read) = (list.len(), started.elapsed());
        index.entries = RwLock::new(Entries::new(list));
        tracing::info!(
            listings,
            from,
            read_ms = read.as_millis() as u64,
            sorted_ms = (started.elapsed() - read).as_millis() as u64,
            "browse index loaded"
        );
        Ok((index, save))
    }

    /// Every listing's entry, read from the rows, and the change counter they are as of.
    fn read_rows(&self, store: &Store) -> Result<(Vec<Entry>, i64)> {
        let (first, last) = store.read_blocking(store::seq_bounds)?;
        let read = |from: i64, to: i64, room: i64| {
            store.read_blocking(|conn| {
                let mut list = Vec::with_capacity(usize::try_from(room).unwrap_or(0));
                let seen =
                    store::each_index_row_in(conn, from, to, |row| list.push(self.entry(&row)))?;
                Ok((list, seen))
            })
        };
        if last - first < 100_000 {
            return read(first, last, last - first + 1);
        }
        let middle = first + (last - first) / 2;
        let (front, back) = std::thread::scope(|scope| {
            let back = std::thread::Builder::new()
                .name("bourse-load".into())
                .spawn_scoped(scope, || read(middle + 1, last, last - middle))
                .ok();
            // Room for both halves: the back one is appended to it.
            let front = read(first, middle, last - first + 1);
            let back = match back {
                Some(back) => back
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                None => read(middle + 1, last, last - middle),
            };
            (front, back)
        });
        let ((mut list, seen_front), (mut back, seen_back)) = (front?, back?);
        if seen_front != seen_back {
            drop((list, back));
            return read(first, last, last - first + 1);
        }
        list.append(&mut back);
        drop(back);
        list.shrink_to_fit();
        Ok((list, seen_front))
    }

    /// Writes the snapshot of this index as of change `seen` to `path` and names it in the
    /// database (in the background after start: see [`snapshot`]); logs how it went.
    pub fn save_snapshot(
        &self,
        store: &Store,
        taxonomy: &Taxonomy,
        path: &std::path::Path,
        seen: i64,
        now: String,
    ) {
        let started = std::time::Instant::now();
        match snapshot::save(
            self,
            store,
            path,
            &snapshot::fingerprint(taxonomy),
            seen,
            now,
        ) {
            Ok(listings) => tracing::info!(
                listings,
                ms = started.elapsed().as_millis() as u64,
                path = %path.display(),
                "browse snapshot written"
            ),
            Err(e) => tracing::warn!(error = %e, "browse snapshot not written"),
        }
    }

    /// An index of no listings, its taxonomy positions set.
    fn empty(taxonomy: &Taxonomy) -> BrowseIndex {
        BrowseIndex {
            entries: RwLock::new(Entries::default()),
            generation: AtomicU64::new(0),
            fts_cache: Mutex::new(HashMap::new()),
            resolving: Mutex::new(HashMap::new()),
            changes: Mutex::new(Changes::default()),
            lookups: tokio::sync::Semaphore::new(words::ASIDE),
            totals: Mutex::new(HashMap::new()),
            walks: Mutex::default(),
            flushes: AtomicU64::new(0),
            category_index: taxonomy
                .categories
                .iter()
                .enumerate()
                .map(|(i, c)| (c.slug.clone(), i as u16))
                .collect(),
            vertical_index: taxonomy
                .verticals
                .iter()
                .enumerate()
                .map(|(i, v)| (v.slug.clone(), i as u16))
                .collect(),
        }
    }

    /// Bumped by every committed catalogue write (kept signed answers check it).
    pub fn generation(&self) -> u64 {
        self.generation.load(AtomicOrdering::SeqCst)
    }

    /// The index position of a category slug.
    pub fn category(&self, slug: &str) -> Option<u16> {
        self.category_index.get(slug).copied()
    }

    /// The index position of a vertical slug.
    pub fn vertical(&self, slug: &str) -> Option<u16> {
        self.vertical_index.get(slug).copied()
    }

    fn entry<S: AsRef<str>>(&self, row: &IndexRow<S>) -> Entry {
        Entry {
            seq: row.seq,
            price_cents: row.price_cents,
            rating_sum: saturate(row.rating_sum),
            rating_count: saturate(row.rating_count),
            purchase_count: saturate(row.purchase_count),
            view_count: saturate(row.view_count),
            quality: row.quality as f32,
            reputation: row.seller_reputation as f32,
            category: self.category(row.category.as_ref()).unwrap_or(u16::MAX),
            vertical: self
                .vertical(row.vertical_slug.as_ref())
                .unwrap_or(u16::MAX),
            // A stored type is always one of the choices (the create writes its name).
            listing_type: ListingType::from_name(row.listing_type.as_ref())
                .unwrap_or(ListingType::Standard) as u8,
            active: row.active,
            sample: row.is_sample,
        }
    }

    /// Records a committed insert or edit of a listing.
    pub fn upsert(&self, row: &ListingRow) {
        self.upsert_rows(&[IndexRow::from(row)]);
    }

    /// Records committed changes of several listings (a seller's reputation moved, say).
    pub fn upsert_rows(&self, rows: &[IndexRow]) {
        let changed: Vec<Entry> = rows.iter().map(|row| self.entry(row)).collect();
        let mut entries = self.entries.write().unwrap_or_else(|p| p.into_inner());
        entries.upsert(&changed);
        // Logged before the new generation is seen, and under the entries' lock: whoever reads
        // a generation finds every change up to it in the log.
        let positions: Vec<usize> = changed.iter().filter_map(|e| entries.at(e.seq)).collect();
        let next = self.generation.load(AtomicOrdering::SeqCst) + 1;
        self.changes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .record(next, &positions);
        self.generation.store(next, AtomicOrdering::SeqCst);
    }

    /// Replaces every entry with `rows` (in `seq` order): a follower whose replica went back in
    /// time. Kept orders and cached matches and totals go with the old entries; the new orders
    /// are built before the old entries are let go, so browses go on meanwhile.
    pub fn replace_all(&self, rows: &[IndexRow]) {
        let fresh = Entries::new(rows.iter().map(|row| self.entry(row)).collect());
        let mut entries = self.entries.write().unwrap_or_else(|p| p.into_inner());
        *entries = fresh;
        let next = self.generation.load(AtomicOrdering::SeqCst) + 1;
        self.changes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .forget(next);
        self.generation.store(next, AtomicOrdering::SeqCst);
        drop(entries);
        self.fts_cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        self.totals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// Records flushed view counts (no search result changes, so cached matches stay valid;
    /// the popular order moves, so its kept walks do not).
    pub fn add_views(&self, views: &[(i64, i64)]) {
        let mut entries = self.entries.write().unwrap_or_else(|p| p.into_inner());
        entries.add_views(views);
        self.flushes.fetch_add(1, AtomicOrdering::SeqCst);
    }

    /// How many listings the index holds.
    fn listings(&self) -> usize {
        self.entries
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .list
            .len()
    }

    /// Active, non-sample listings per vertical position.
    pub fn counts_by_vertical(&self) -> HashMap<u16, i64> {
        let entries = self.entries.read().unwrap_or_else(|p| p.into_inner());
        let mut counts = HashMap::new();
        for entry in entries.list.iter().filter(|e| e.active && !e.sample) {
            *counts.entry(entry.vertical).or_insert(0) += 1;
        }
        counts
    }

    /// Runs a browse: the `seq`s of the requested page, in order, and the total of matches.
    ///
    /// A page within a walk kept for the same filters and sort (`walks.rs`) is a slice of it.
    /// Otherwise, three ways, by what the request is: a rare search visits its matches only
    /// (its kept list); a sorted browse walks that sort's kept order, skipping what the filters
    /// refuse, until it has twice the depth kept before or the depth asked; `sort=recent` walks
    /// the entries newest first the same way. Totals are cached per filter set until the next
    /// catalogue write; a total not yet known costs one counting pass over the entries.
    ///
    /// # Errors
    /// Database failure while resolving a search expression.
    pub fn query(&self, conn: &Connection, query: &Query) -> Result<(Vec<i64>, usize)> {
        let (filters, sort) = (&query.filters, query.sort);
        let (generation, depth) = {
            // Under the entries' read lock, which every writer of the stamp holds: a kept walk
            // of this stamp indexes the entries as they are.
            let entries = self.entries.read().unwrap_or_else(|p| p.into_inner());
            let stamp = self.stamp(sort);
            let mut walks = self.walks.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((page, total)) =
                walks.page(filters, sort, stamp, (query.offset, query.limit))
            {
                return Ok((walks::seqs_at(&entries, &page), total));
            }
            let wanted = query.offset.saturating_add(query.limit).max(1);
            (stamp.0, walks.depth(filters, sort, stamp, wanted))
        };
        let walked = self.walk(conn, query, generation, depth)?;
        if let Some((stamp, positions, complete)) = walked.kept {
            let mut walks = self.walks.lock().unwrap_or_else(|p| p.into_inner());
            walks.keep((filters, sort), stamp, positions, complete, walked.total);
        }
        Ok((walked.page, walked.total))
    }

    fn remember_total(&self, filters: &Filters, generation: u64, total: usize) {
        let mut totals = self.totals.lock().unwrap_or_else(|p| p.into_inner());
        if totals.len() >= CACHE_MAX {
            totals.retain(|_, (cached, _)| *cached == generation);
            if totals.len() >= CACHE_MAX {
                totals.clear();
            }
        }
        totals.insert(filters.clone(), (generation, total));
    }
}

/// Who is querying, for the query and querier counters: the agent when known, else the client
/// address (salted and hashed by `App::querier_key`).
pub fn querier(app: &App, agent: Option<&AgentRow>, ip: &str) -> String {
    let identity = match agent {
        Some(agent) => format!("agent:{}", agent.id),
        None => format!("ip:{ip}"),
    };
    app.querier_key(&identity)
}

/// Resolves a browse request against the taxonomy and the index; unknown slugs are 400 naming
/// the parameter and its allowed values.
///
/// # Errors
/// `INVALID_ARGUMENT`.
pub fn browse_query(app: &App, request: &Browse) -> Result<Query> {
    let category = request.category.as_deref();
    if let Some(slug) = category
        && app.taxonomy.category(slug).is_none()
    {
        let allowed: Vec<&str> = app
            .taxonomy
            .categories
            .iter()
            .map(|c| c.slug.as_str())
            .collect();
        return Err(Error::invalid(format!(
            "`category` must be one of {}; got {slug:?}",
            allowed.join(", ")
        )));
    }
    let vertical = request.vertical.as_deref();
    if let Some(slug) = vertical
        && app.taxonomy.vertical(slug).is_none()
    {
        return Err(Error::invalid(format!(
            "`vertical` {slug:?} is not a vertical slug; see GET /api/verticals"
        )));
    }
    let categories = match &request.class {
        None => None,
        Some(class) => {
            let upper = class.to_ascii_uppercase();
            let members = app.taxonomy.class_categories(&upper);
            if members.is_empty() {
                let allowed: Vec<&str> = app
                    .taxonomy
                    .classes
                    .iter()
                    .map(|c| c.slug.as_str())
                    .collect();
                return Err(Error::invalid(format!(
                    "`class` must be one of {}; got {class:?}",
                    allowed.join(", ")
                )));
            }
            Some(members)
        }
    };
    let index = &app.browse;
    Ok(Query {
        filters: Filters {
            fts: request.q.as_deref().and_then(fts_query),
            category: category.and_then(|slug| index.category(slug)),
            categories: categories
                .map(|slugs| slugs.iter().filter_map(|s| index.category(s)).collect()),
            vertical: vertical.and_then(|slug| index.vertical(slug)),
            listing_type: request.listing_type.map(|t| t as u8),
            samples: request.samples,
            price: request.price,
            min_rating_tenths: request.min_rating.map(|value| (value * 10.0).ceil() as i64),
        },
        sort: request.sort,
        limit: request.limit as usize,
        offset: request.offset as usize,
    })
}

/// Turns user text into a safe FTS5 query: every word becomes a quoted string (so FTS syntax
/// cannot be injected) and all words must match. `None` when the text has no words.
pub fn fts_query(text: &str) -> Option<String> {
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(16)
        .map(|w| format!("\"{}\"", w.to_lowercase()))
        .collect();
    (!words.is_empty()).then(|| words.join(" "))
}

/// A browse page as the MCP face answers it: the members in the order of the signed REST
/// page's canonical bytes, each listing's too.
#[derive(Serialize)]
pub struct Page<'a> {
    pub limit: usize,
    pub listings: Vec<ListingView<'a>>,
    pub offset: usize,
    pub total: usize,
}

/// `browse_marketplace`: the page `GET /api/marketplace/listings` answers, typed. Filters and
/// sorts run over the in-memory index; SQLite serves full-text matches and the page's rows.
///
/// # Errors
/// `INVALID_ARGUMENT`; database failure.
pub async fn browse<'a>(app: &'a App, request: &Browse, querier: String) -> Result<Page<'a>> {
    let query = browse_query(app, request)?;
    app.counters.query(querier);
    let (limit, offset) = (query.limit, query.offset);
    let (rows, total) = fetch_page(app, query).await?;
    Ok(Page {
        limit,
        listings: rows
            .into_iter()
            .map(|row| ListingView::owned(app, row).in_canonical_order())
            .collect(),
        offset,
        total,
    })
}

/// `GET /api/marketplace/listings` as signed bytes: a page signed earlier is reused while
/// nothing that shapes it has changed (`catalog::signed`, keyed by the whole query); the query
/// is counted either way.
///
/// # Errors
/// As [`browse`].
pub async fn signed_browse(
    app: &App,
    request: &Browse,
    querier: String,
) -> Result<super::signed::Body> {
    let query = browse_query(app, request)?;
    app.counters.query(querier);
    let key = format!("browse {query:?}");
    let stamp = super::signed::catalogue_stamp(app);
    let now = app.clock.now();
    if let Some((body, _)) = app.signed.get(&key, stamp, now) {
        return Ok(body);
    }
    let members = page(app, query).await?;
    let body: super::signed::Body =
        crate::service::trust::provenance::sign_members(app, members).into();
    app.signed.put(&key, stamp, -1, body.clone(), now);
    Ok(body)
}

/// The page `query` asks for, as canonical members (unsigned): browse is the hottest read, so
/// it never builds a `Value` per listing, and its listings are rendered on the reader thread
/// straight from SQLite's buffers, no column copied.
async fn page(app: &App, query: Query) -> Result<CanonicalMembers> {
    let (limit, offset) = (query.limit, query.offset);
    let (taxonomy, counters) = (app.taxonomy.clone(), app.counters.clone());
    let (listings, total) = read_page(app, query, move |conn, seqs| {
        let mut listings = Vec::with_capacity(seqs.len() * 1400 + 2);
        listings.push(b'[');
        store::visit_page(conn, seqs, |row| {
            // A listing deactivated after the index pass never appears.
            if row.active {
                if listings.len() > 1 {
                    listings.push(b',');
                }
                write_listing_canonical((&taxonomy, &counters), row, &mut listings);
            }
        })?;
        listings.push(b']');
        Ok(listings)
    })
    .await?;
    Ok(vec![
        ("limit".to_owned(), limit.to_string().into_bytes()),
        ("listings".to_owned(), listings),
        ("offset".to_owned(), offset.to_string().into_bytes()),
        ("total".to_owned(), total.to_string().into_bytes()),
    ])
}

/// The active rows of the page `query` asks for, and the total of matches.
///
/// # Errors
/// Database failure.
pub async fn fetch_page(app: &App, query: Query) -> Result<(Vec<ListingRow>, usize)> {
    read_page(app, query, |conn, seqs| {
        let mut rows = store::fetch_page(conn, seqs)?;
        // A listing deactivated after the index pass never appears.
        rows.retain(|row| row.active);
        Ok(rows)
    })
    .await
}

/// What `read` makes of the page `query` asks for (its listings' `seq`s, in order), on a reader
/// thread, and the total of matches. A search word not kept yet is looked up first, aside.
async fn read_page<T: Send + 'static>(
    app: &App,
    query: Query,
    read: impl FnOnce(&Connection, &[i64]) -> Result<T> + Send + 'static,
) -> Result<(T, usize)> {
    let index = app.browse.clone();
    if let Some(expression) = &query.filters.fts {
        index.look_up_aside(&app.store, expression).await?;
    }
    app.store
        .read(move |conn| {
            let (seqs, total) = index.query(conn, &query)?;
            Ok((read(conn, &seqs)?, total))
        })
        .await
}

#[path = "snapshot.rs"]
mod snapshot;
#[path = "walks.rs"]
mod walks;
#[path = "words.rs"]
mod words;

#[cfg(test)]
#[path = "browse_tests.rs"]
mod tests;
