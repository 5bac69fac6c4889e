//! Hits sorted by a field (`sort=<field>:asc|desc`, issue #22): a bounded
//! top-k per segment over the field's fast columns, merged across segments,
//! paged with a cursor that carries the last hit's value.
//!
//! The order (the same as the OpenSearch backend's):
//!
//! - events with a value first, by value: numbers, then strings (bytewise),
//!   then booleans (ascending; descending reverses the values, not the
//!   types' place relative to "missing");
//! - an event with several values sorts by its smallest (ascending) or
//!   largest (descending) one;
//! - events without the field last;
//! - ties, and the events without the field, newest first (`_ts`, then
//!   arrival `_seq`).
//!
//! Unlike the time order, no segment can be skipped: any of them may hold
//! the best value. Where the field is one single-valued column and the
//! query matches densely, a segment's column is scanned for the values
//! that can still enter the page, and only the rows found are tested
//! against the query (`sort/segment.rs`; numbers ADR 0119, strings by
//! their ordinals ADR 0121, the windows with the best ends first ADR
//! 0122). Elsewhere every matching event is read once (one column read
//! per event; a single column a block of events at a time; a string read
//! once per segment, and only while its ordinal can still enter the
//! page). Either way an event whose value comes strictly after the worst
//! hit kept is refused on its value alone, before its `_ts` and `_seq`
//! are read. The segments are read on the store's search threads
//! (ADR 0115).

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use sluice_query::api::Search;
use sluice_query::{BackendError, Principal, SearchResponse, SortBy};
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::{Cardinality, Column, DynamicColumn, NumericalType, StrColumn};
use tantivy::{DocAddress, DocId, Score, SegmentOrdinal, SegmentReader};

use crate::plan::Plan;
use crate::schema::names;
use crate::search::{column_of, hit_of};
use crate::store::Store;

mod segment;

/// A sort value of one event.
#[derive(Clone, Debug, PartialEq)]
pub enum SortValue {
    /// A number.
    Num(f64),
    /// A string.
    Str(Arc<str>),
    /// A boolean.
    Bool(bool),
}

impl SortValue {
    fn type_rank(&self) -> u8 {
        match self {
            SortValue::Num(_) => 0,
            SortValue::Str(_) => 1,
            SortValue::Bool(_) => 2,
        }
    }

    fn cmp_asc(&self, o: &SortValue) -> Ordering {
        match (self, o) {
            (SortValue::Num(a), SortValue::Num(b)) => a.total_cmp(b),
            (SortValue::Str(a), SortValue::Str(b)) => a.as_bytes().cmp(b.as_bytes()),
            (SortValue::Bool(a), SortValue::Bool(b)) => a.cmp(b),
            _ => self.type_rank().cmp(&o.type_rank()),
        }
    }
}

/// How two values (`None`: no value) stand in the sort, before the tie on
/// time: `Greater` when `a` comes after `b`.
fn value_order(a: Option<&SortValue>, b: Option<&SortValue>, desc: bool) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(a), Some(b)) if desc => b.cmp_asc(a),
        (Some(a), Some(b)) => a.cmp_asc(b),
    }
}

/// Where a hit stands in a field sort: its value (if any), time and arrival.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldKey {
    /// The event's value (smallest or largest of several); `None`: no value.
    pub value: Option<SortValue>,
    /// `_ts`.
    pub ts: i64,
    /// `_seq`.
    pub seq: u64,
}

impl FieldKey {
    /// `Less` when `self` comes before `o` in the sort (see the module docs).
    pub fn cmp_in(&self, o: &FieldKey, desc: bool) -> Ordering {
        value_order(self.value.as_ref(), o.value.as_ref(), desc).then_with(|| (o.ts, o.seq).cmp(&(self.ts, self.seq)))
    }

    /// The cursor of this hit: `<ts>:<seq>:<value>` with the value as `n<number>`,
    /// `s<string>`, `b0`/`b1` or `-` (none); the value last, so a string may
    /// hold colons.
    pub fn cursor(&self) -> String {
        let v = match &self.value {
            None => "-".to_string(),
            Some(SortValue::Num(n)) => format!("n{n}"),
            Some(SortValue::Str(s)) => format!("s{s}"),
            Some(SortValue::Bool(b)) => format!("b{}", u8::from(*b)),
        };
        format!("{}:{}:{v}", self.ts, self.seq)
    }

    /// Reads a [`FieldKey::cursor`].
    pub fn from_cursor(c: &str) -> Result<FieldKey, BackendError> {
        let err = || BackendError::BadRequest(format!("invalid search_after cursor {c:?} for a sorted search"));
        let mut parts = c.splitn(3, ':');
        let ts = parts.next().and_then(|t| t.parse().ok()).ok_or_else(err)?;
        let seq = parts.next().and_then(|t| t.parse().ok()).ok_or_else(err)?;
        let v = parts.next().ok_or_else(err)?;
        let value = match v.split_at_checked(1).ok_or_else(err)? {
            ("-", "") => None,
            ("n", n) => Some(SortValue::Num(n.parse().map_err(|_| err())?)),
            ("s", s) => Some(SortValue::Str(Arc::from(s))),
            ("b", "0") => Some(SortValue::Bool(false)),
            ("b", "1") => Some(SortValue::Bool(true)),
            _ => return Err(err()),
        };
        Ok(FieldKey { value, ts, seq })
    }
}

/// A heap entry: the worst hit kept is the greatest.
struct Entry {
    key: FieldKey,
    doc: DocId,
    desc: bool,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> Ordering {
        self.key.cmp_in(&o.key, self.desc)
    }
}

/// Counts every match and keeps the `k` first in the field sort strictly
/// after `after`.
pub struct FieldTopCollector {
    /// The fast column (`attrs.http.status`, `@host`).
    pub column: String,
    /// Largest first.
    pub desc: bool,
    /// Hits to keep.
    pub k: usize,
    /// Only hits after this one (the previous page's last).
    pub after: Option<FieldKey>,
}

enum SortCol {
    Str(StrColumn, Memo),
    Num(Column<f64>),
    Bool(Column<bool>),
}

/// Per-segment part of [`FieldTopCollector`].
pub struct FieldTopSegment {
    desc: bool,
    k: usize,
    after: Option<FieldKey>,
    cols: Vec<SortCol>,
    ts: Column<i64>,
    seq: Column<u64>,
    count: u64,
    heap: BinaryHeap<Entry>,
    ords: Vec<u64>,
    /// Values of a block of documents (the one-number-column path).
    nums: Vec<Option<f64>>,
    /// Ordinals of a block of documents (the one-string-column path).
    found: Vec<Option<u64>>,
    /// The block's documents that can enter the page, with their strings.
    vals: Vec<(DocId, Option<SortValue>)>,
}

/// The strings of a string column's ordinals read so far in a segment, and
/// the ordinal of each by the string's address (the hits kept hold clones
/// of them). Only ordinals met are held: a column of 20 M distinct strings
/// costs nothing until its strings are read (a table of one slot per
/// ordinal took 16 bytes for each, whatever the query matched).
#[derive(Default)]
struct Memo {
    strs: HashMap<u64, Arc<str>, foldhash::fast::RandomState>,
    ords: HashMap<usize, u64, foldhash::fast::RandomState>,
}

impl Memo {
    fn get(&self, ord: u64) -> Option<&Arc<str>> {
        self.strs.get(&ord)
    }

    fn put(&mut self, ord: u64, s: Arc<str>) {
        self.ords.insert(Arc::as_ptr(&s) as *const u8 as usize, ord);
        self.strs.insert(ord, s);
    }

    /// Reads the strings of `ords` not read before, in one sorted walk of
    /// the dictionary (`ords` is reordered).
    fn read(&mut self, col: &StrColumn, ords: &mut Vec<u64>) {
        ords.retain(|o| !self.strs.contains_key(o));
        read_strs(col, ords, |o, s| self.put(o, s));
    }

    /// The ordinal of `s` in `col`: by address when this memo read it,
    /// else from the dictionary (`None`: not in it).
    fn ord_of(&self, col: &StrColumn, s: &Arc<str>) -> Option<u64> {
        match self.ords.get(&(Arc::as_ptr(s) as *const u8 as usize)) {
            Some(&o) => Some(o),
            None => col.dictionary().term_ord(s.as_bytes()).ok()?,
        }
    }
}

/// The last ordinal of a string column that can still enter a full page
/// (ascending; the first, descending): the worst hit's. `None` when the
/// page is not full or its worst hit is not a string of the column
/// (every string can then enter, or the value test decides; the value-led
/// scan, whose page holds only its strings, reads a full page's `None` as
/// "no string can").
fn str_bound(heap: &BinaryHeap<Entry>, k: usize, col: &StrColumn, memo: &Memo) -> Option<u64> {
    if heap.len() < k {
        return None;
    }
    match heap.peek().map(|w| &w.key.value) {
        Some(Some(SortValue::Str(w))) => memo.ord_of(col, w),
        _ => None,
    }
}

/// Whether ordinal `o` is not after `bound` in the sort.
fn within(o: u64, bound: Option<u64>, desc: bool) -> bool {
    bound.is_none_or(|b| if desc { o >= b } else { o <= b })
}

/// Total matches and the first hits in the sort, best first.
pub type FieldTopFruit = (u64, Vec<(FieldKey, DocId)>);

impl Collector for FieldTopCollector {
    type Fruit = FieldTopFruit;
    type Child = FieldTopSegment;

    fn for_segment(&self, _ord: SegmentOrdinal, reader: &SegmentReader) -> tantivy::Result<FieldTopSegment> {
        let mut cols = Vec::new();
        for h in reader.fast_fields().dynamic_column_handles(&self.column)? {
            match h.open()? {
                DynamicColumn::Str(c) => cols.push(SortCol::Str(c, Memo::default())),
                DynamicColumn::Bool(c) => cols.push(SortCol::Bool(c)),
                other => {
                    if let Some(DynamicColumn::F64(c)) = other.coerce_numerical(NumericalType::F64) {
                        cols.push(SortCol::Num(c));
                    }
                }
            }
        }
        Ok(FieldTopSegment {
            desc: self.desc,
            k: self.k,
            after: self.after.clone(),
            cols,
            ts: reader.fast_fields().i64(names::TS)?,
            seq: reader.fast_fields().u64(names::SEQ)?,
            count: 0,
            heap: BinaryHeap::with_capacity(self.k + 1),
            ords: Vec::new(),
            nums: Vec::new(),
            found: Vec::new(),
            vals: Vec::new(),
        })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, fruits: Vec<FieldTopFruit>) -> tantivy::Result<FieldTopFruit> {
        let (mut count, mut all) = (0, Vec::new());
        for (c, hits) in fruits {
            count += c;
            all.extend(hits);
        }
        all.sort_by(|a, b| a.0.cmp_in(&b.0, self.desc));
        all.truncate(self.k);
        Ok((count, all))
    }
}

impl FieldTopSegment {
    /// Keeps `doc` (with `value`) when it is among the `k` first after
    /// `after`. A value that comes strictly after the worst hit kept cannot
    /// enter whatever its time: it is refused before `_ts` and `_seq` are
    /// read (most documents, once the heap is full).
    fn offer(&mut self, doc: DocId, value: Option<SortValue>) {
        if self.heap.len() >= self.k {
            if let Some(worst) = self.heap.peek() {
                if value_order(value.as_ref(), worst.key.value.as_ref(), self.desc) == Ordering::Greater {
                    return;
                }
            }
        }
        let key = FieldKey { value, ts: self.ts.first(doc).unwrap_or(0), seq: self.seq.first(doc).unwrap_or(0) };
        if self.after.as_ref().is_some_and(|a| key.cmp_in(a, self.desc) != Ordering::Greater) {
            return;
        }
        let entry = Entry { key, doc, desc: self.desc };
        if self.heap.len() < self.k {
            self.heap.push(entry);
        } else if let Some(mut worst) = self.heap.peek_mut() {
            if entry < *worst {
                *worst = entry;
            }
        }
    }

    /// The doc's value: over every column, the first in the sort.
    fn value(&mut self, doc: DocId) -> Option<SortValue> {
        let desc = self.desc;
        let mut best: Option<SortValue> = None;
        let mut offer = |v: SortValue| {
            let better = match &best {
                None => true,
                Some(b) if desc => v.cmp_asc(b) == Ordering::Greater,
                Some(b) => v.cmp_asc(b) == Ordering::Less,
            };
            if better {
                best = Some(v);
            }
        };
        for col in &mut self.cols {
            match col {
                SortCol::Num(c) => c.values_for_doc(doc).for_each(|v| offer(SortValue::Num(v))),
                SortCol::Bool(c) => c.values_for_doc(doc).for_each(|v| offer(SortValue::Bool(v))),
                SortCol::Str(c, memo) => {
                    self.ords.clear();
                    self.ords.extend(c.term_ords(doc));
                    // Ordinals follow the strings' byte order within a segment.
                    let ord = if desc { self.ords.iter().max() } else { self.ords.iter().min() };
                    let Some(&ord) = ord else { continue };
                    // A string after the worst hit's cannot make the event
                    // enter (whatever its other columns hold): not read
                    // (one already read is refused by its value).
                    if memo.get(ord).is_none() {
                        if !within(ord, str_bound(&self.heap, self.k, c, memo), desc) {
                            continue;
                        }
                        let mut s = String::new();
                        if c.ord_to_str(ord, &mut s).unwrap_or(false) {
                            memo.put(ord, Arc::from(s));
                        }
                    }
                    if let Some(s) = memo.get(ord) {
                        offer(SortValue::Str(Arc::clone(s)));
                    }
                }
            }
        }
        best
    }
}

impl SegmentCollector for FieldTopSegment {
    type Fruit = FieldTopFruit;

    fn collect(&mut self, doc: DocId, _score: Score) {
        self.count += 1;
        if self.k == 0 {
            return;
        }
        let value = self.value(doc);
        self.offer(doc, value);
    }

    /// A block of matches. With one single-valued number column (the
    /// common case: `bytes`, `status`) the values are read for the whole
    /// block at once; every document still goes through `offer`.
    fn collect_block(&mut self, docs: &[DocId]) {
        let mut nums = std::mem::take(&mut self.nums);
        match self.cols.as_mut_slice() {
            [SortCol::Num(c)] if self.k > 0 && c.get_cardinality() != Cardinality::Multivalued => {
                nums.clear();
                nums.resize(docs.len(), None);
                c.first_vals(docs, &mut nums);
            }
            // One single-valued string column: the block's ordinals read at
            // once; of those not after the worst hit's (the page's bound
            // only tightens while the block is offered), the strings not
            // met before read in one sorted walk.
            [SortCol::Str(c, memo)] if self.k > 0 && c.ords().get_cardinality() != Cardinality::Multivalued => {
                self.nums = nums;
                let desc = self.desc;
                let bound = str_bound(&self.heap, self.k, c, memo);
                let mut found = std::mem::take(&mut self.found);
                found.clear();
                found.resize(docs.len(), None);
                c.ords().first_vals(docs, &mut found);
                self.ords.clear();
                self.ords.extend(found.iter().flatten().filter(|&&o| within(o, bound, desc)));
                memo.read(c, &mut self.ords);
                let mut vals = std::mem::take(&mut self.vals);
                vals.clear();
                vals.extend(docs.iter().zip(&found).filter_map(|(&doc, o)| match *o {
                    // Events without a value enter after every string.
                    None => Some((doc, None)),
                    Some(o) if within(o, bound, desc) => Some((doc, memo.get(o).cloned().map(SortValue::Str))),
                    Some(_) => None,
                }));
                self.count += docs.len() as u64;
                for (doc, v) in vals.drain(..) {
                    self.offer(doc, v);
                }
                (self.found, self.vals) = (found, vals);
                return;
            }
            _ => {
                self.nums = nums;
                for &doc in docs {
                    self.collect(doc, 0.0);
                }
                return;
            }
        }
        self.count += docs.len() as u64;
        for (&doc, v) in docs.iter().zip(&nums) {
            self.offer(doc, v.map(SortValue::Num));
        }
        self.nums = nums;
    }

    fn harvest(self) -> FieldTopFruit {
        let mut hits: Vec<(FieldKey, DocId)> = self.heap.into_iter().map(|e| (e.key, e.doc)).collect();
        hits.sort_by(|a, b| a.0.cmp_in(&b.0, self.desc));
        (self.count, hits)
    }
}

/// Reads the strings of `ords` (sorted and deduplicated here) from the
/// column's dictionary in one sorted walk — each dictionary block decoded
/// once, where a lookup per ordinal decodes its block up to the ordinal —
/// handing each to `put`.
fn read_strs(col: &StrColumn, ords: &mut Vec<u64>, mut put: impl FnMut(u64, Arc<str>)) {
    if ords.is_empty() {
        return;
    }
    ords.sort_unstable();
    ords.dedup();
    let mut i = 0;
    // An ordinal the walk cannot read keeps no string: its events sort as
    // if without a value, as when it is looked up alone.
    let _ = col.dictionary().sorted_ords_to_term_cb(ords, |b| {
        if let Ok(s) = std::str::from_utf8(b) {
            put(ords[i], Arc::from(s));
        }
        i += 1;
    });
}

/// A page of hits of `search` sorted by `by` (blocking): every segment of the
/// plan through a [`FieldTopCollector`], merged.
pub fn search_sorted(
    store: &Store,
    principal: &Principal,
    search: &Search,
    by: &SortBy,
) -> Result<SearchResponse, BackendError> {
    let t0 = Instant::now();
    let column = column_of(&by.field, "sort")?;
    let after = search.search_after.as_deref().map(FieldKey::from_cursor).transpose()?;
    let plan = Plan::new(store, principal, &search.query, search.range.from_ns, search.range.to_ns)?;
    let collector = FieldTopCollector { column, desc: by.desc, k: search.size + 1, after };
    let mut total = 0;
    let mut cands: Vec<(FieldKey, usize, DocId)> = Vec::new();
    let segs = plan.segments();
    // Every segment is read (any may hold the best value): on the store's
    // search threads, merged in segment order.
    let per_seg = plan.map(segs.iter().collect(), |s| segment::top(&plan, s, &collector))?;
    for (i, (count, hits)) in per_seg.into_iter().enumerate() {
        total += count;
        cands.extend(hits.into_iter().map(|(key, doc)| (key, i, doc)));
    }
    cands.sort_by(|a, b| a.0.cmp_in(&b.0, by.desc));
    cands.truncate(collector.k);
    let more = cands.len() > search.size;
    cands.truncate(search.size);
    let mut hits = Vec::with_capacity(cands.len());
    for (key, i, doc) in &cands {
        let s = &segs[*i];
        let addr = DocAddress::new(s.ord, *doc);
        hits.push(hit_of(store, plan.searcher(s), addr, (key.ts, key.seq), search.fields.as_deref())?);
    }
    let next = if more { cands.last().map(|c| c.0.cursor()) } else { None };
    Ok(SearchResponse { total, hits, next, took_ms: t0.elapsed().as_millis() as u64 })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(v: Option<SortValue>, ts: i64) -> FieldKey {
        FieldKey { value: v, ts, seq: 0 }
    }

    #[test]
    fn missing_values_come_last_in_both_directions_and_ties_newest_first() {
        let n = |x: f64, ts| key(Some(SortValue::Num(x)), ts);
        let mut v = vec![key(None, 5), n(2.0, 1), n(10.0, 2), n(2.0, 3), key(None, 9)];
        v.sort_by(|a, b| a.cmp_in(b, false));
        assert_eq!(v, vec![n(2.0, 3), n(2.0, 1), n(10.0, 2), key(None, 9), key(None, 5)]);
        v.sort_by(|a, b| a.cmp_in(b, true));
        assert_eq!(v, vec![n(10.0, 2), n(2.0, 3), n(2.0, 1), key(None, 9), key(None, 5)]);
    }

    #[test]
    fn cursors_round_trip() {
        for v in [
            None,
            Some(SortValue::Num(-2.5)),
            Some(SortValue::Str(Arc::from("a:b"))),
            Some(SortValue::Str(Arc::from(""))),
            Some(SortValue::Bool(true)),
        ] {
            let k = FieldKey { value: v, ts: -7, seq: 3 };
            assert_eq!(FieldKey::from_cursor(&k.cursor()).unwrap(), k);
        }
        for bad in ["", "1:2", "1:2:", "1:2:x", "a:2:-", "1:2:b2"] {
            assert!(FieldKey::from_cursor(bad).is_err(), "{bad}");
        }
    }
}
