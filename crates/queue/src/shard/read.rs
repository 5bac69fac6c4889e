//! The read side of a shard: handing out records in order, acknowledging
//! them, moving the acknowledged frontier and writing the checkpoint.

use super::*;

impl Shard {
    /// Hands out the next unread record of this shard, if any.
    pub fn try_next(&self) -> Result<Option<Record>, QueueError> {
        loop {
            let Some(loc) = self.locate_next()? else {
                return Ok(None);
            };
            let mut payload = vec![0u8; loc.len as usize];
            if let Err(e) = loc.file.read_exact_at(&mut payload, loc.pos.1 + RECORD_HEADER_LEN as u64) {
                let mut st = self.read.lock();
                st.inflight.remove(&loc.pos);
                st.retry.insert(loc.pos);
                return Err(QueueError::io(&loc.path, e));
            }
            let header = decode_record_header(&loc.header);
            let ok = header.is_ok_and(|h| verify_record(&loc.header, &h, &payload, loc.pos.0, loc.version));
            if !ok {
                warn!(path = %loc.path.display(), offset = loc.pos.1,
                    "record crc mismatch at read time; skipping record");
                self.shared.corrupt_total.fetch_add(1, Ordering::SeqCst);
                self.complete(loc.pos)?;
                continue;
            }
            return Ok(Some(Record {
                id: RecordId { shard: self.id, segment: loc.pos.0, offset: loc.pos.1 },
                events: loc.events,
                payload,
            }));
        }
    }

    /// Under the read lock: picks the next record position, reads and checks
    /// its header and marks it in flight.
    pub(super) fn locate_next(&self) -> Result<Option<Located>, QueueError> {
        let mut st = self.read.lock();
        loop {
            let from_retry = st.retry.first().copied();
            let pos = match from_retry {
                Some(p) => p,
                None => {
                    let Some(idx) = st.index_of(st.cursor.0) else {
                        return Ok(None);
                    };
                    let covering = st
                        .acked
                        .range(..=st.cursor)
                        .next_back()
                        .filter(|(k, e)| k.0 == st.cursor.0 && **e > st.cursor.1)
                        .map(|(_, e)| *e);
                    if let Some(end) = covering {
                        // Acknowledged before the last restart: skip.
                        let before = st.frontier();
                        st.cursor.1 = end;
                        self.frontier_moved(&mut st, before)?;
                        continue;
                    }
                    let seg = &st.segments[idx];
                    if st.cursor.1 < seg.end && !seg.broken {
                        st.cursor
                    } else if seg.sealed && idx + 1 < st.segments.len() {
                        if seg.broken && seg.end > st.cursor.1 {
                            self.shared.release(seg.end - st.cursor.1);
                        }
                        let before = st.frontier();
                        st.cursor = (st.segments[idx + 1].id, SEGMENT_HEADER_LEN);
                        self.frontier_moved(&mut st, before)?;
                        continue;
                    } else {
                        return Ok(None);
                    }
                }
            };
            let Some(idx) = st.index_of(pos.0) else {
                // Cannot happen: unacked positions keep their segment alive.
                st.retry.remove(&pos);
                continue;
            };
            let seg = &st.segments[idx];
            let (file, path, version) = (Arc::clone(&seg.file), seg.path.clone(), seg.version);
            let mut header = [0u8; RECORD_HEADER_LEN];
            file.read_exact_at(&mut header, pos.1).map_err(io_at(&path))?;
            let h = match decode_record_header(&header) {
                Ok(h) if pos.1 + h.total_len() <= seg.end => h,
                Ok(_) | Err(_) => {
                    warn!(path = %path.display(), offset = pos.1,
                        "invalid record header at read time; skipping rest of segment");
                    self.shared.corrupt_total.fetch_add(1, Ordering::SeqCst);
                    if from_retry.is_some() {
                        st.retry.remove(&pos);
                    } else {
                        st.segments[idx].broken = true;
                        if idx + 1 == st.segments.len() {
                            self.force_roll.store(true, Ordering::SeqCst);
                        }
                    }
                    continue;
                }
            };
            if from_retry.is_some() {
                st.retry.remove(&pos);
            } else {
                st.cursor.1 += h.total_len();
            }
            st.inflight.insert(pos, InFlight { bytes: h.total_len(), events: h.events });
            return Ok(Some(Located { pos, file, path, header, len: h.len, events: h.events, version }));
        }
    }

    /// Acknowledges the in-flight record `id` (which must belong to this shard).
    pub fn ack(&self, id: RecordId) -> Result<(), QueueError> {
        if !self.complete((id.segment, id.offset))? {
            return Err(QueueError::UnknownRecord(id));
        }
        self.shared.acked_total.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    /// Removes an in-flight record, frees its capacity, advances the frontier.
    /// Returns `false` if `pos` was not in flight.
    pub(super) fn complete(&self, pos: Pos) -> Result<bool, QueueError> {
        let mut st = self.read.lock();
        let before = st.frontier();
        let Some(done) = st.inflight.remove(&pos) else {
            return Ok(false);
        };
        self.shared.records.fetch_sub(1, Ordering::SeqCst);
        self.shared.events.fetch_sub(u64::from(done.events), Ordering::SeqCst);
        self.shared.release(done.bytes);
        // Record the acked range, merged with its neighbours.
        let mut start = pos;
        let mut end = pos.1 + done.bytes;
        if let Some((&prev, &prev_end)) = st.acked.range(..pos).next_back() {
            if prev.0 == pos.0 && prev_end == pos.1 {
                start = prev;
            }
        }
        // Only merge with a successor that was delivered in this lifetime;
        // ranges at or after the cursor are skip ranges for readers.
        if (pos.0, end) < st.cursor {
            if let Some(next_end) = st.acked.remove(&(pos.0, end)) {
                end = next_end;
            }
        }
        st.acked.insert(start, end);
        st.dirty = true;
        let after = st.frontier();
        if after == before
            && (self.fsync == FsyncPolicy::Always || st.last_checkpoint.elapsed() >= self.checkpoint_interval)
        {
            self.write_checkpoint(&mut st, after)?;
        }
        self.frontier_moved(&mut st, before)?;
        Ok(true)
    }

    /// Called after anything that may advance the frontier: persists the
    /// checkpoint when due and deletes segments entirely behind the frontier.
    pub(super) fn frontier_moved(&self, st: &mut ReadState, before: Pos) -> Result<(), QueueError> {
        let after = st.frontier();
        if after == before {
            return Ok(());
        }
        // Ranges behind the frontier are implied by it; a range reaching
        // over the frontier (a skip range at the cursor) keeps its tail.
        let mut keep = st.acked.split_off(&after);
        if let Some((&k, &e)) = st.acked.iter().next_back() {
            if k.0 == after.0 && e > after.1 {
                keep.insert(after, e);
            }
        }
        st.acked = keep;
        let deletable = st.segments.iter().take_while(|s| s.id < after.0 && s.sealed).count();
        let due = deletable > 0
            || self.fsync == FsyncPolicy::Always
            || st.last_checkpoint.elapsed() >= self.checkpoint_interval;
        if due {
            // Checkpoint first: a crash between the two steps then leaves an
            // already-acked segment behind (deleted on next open), never a
            // checkpoint pointing behind deleted data.
            self.write_checkpoint(st, after)?;
        }
        for _ in 0..deletable {
            // INVARIANT: `deletable` counts existing front segments.
            let seg = st.segments.pop_front().expect("counted segment");
            self.shared.segments.fetch_sub(1, Ordering::SeqCst);
            if st.spares.len() < MAX_SPARES && !seg.broken {
                // Kept for reuse by a later roll (a rename, no data touched).
                let spare = spare_path(&self.dir, seg.id);
                match fs::rename(&seg.path, &spare) {
                    Ok(()) => {
                        st.spares.push(spare);
                        continue;
                    }
                    Err(e) => {
                        warn!(path = %seg.path.display(), error = %e, "cannot keep acknowledged segment as a spare")
                    }
                }
            }
            match fs::remove_file(&seg.path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(QueueError::io(&seg.path, e)),
            }
        }
        Ok(())
    }

    pub(super) fn write_checkpoint(&self, st: &mut ReadState, frontier: Pos) -> Result<(), QueueError> {
        let tmp = self.dir.join(CHECKPOINT_TMP_FILE);
        let dst = self.dir.join(CHECKPOINT_FILE);
        {
            let mut f = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&tmp)
                .map_err(io_at(&tmp))?;
            let cp = Checkpoint {
                frontier,
                acked: st.acked.range(frontier..).map(|(&(seg, start), &end)| (seg, start, end)).collect(),
            };
            f.write_all(&encode_checkpoint(&cp)).map_err(io_at(&tmp))?;
            if self.fsync != FsyncPolicy::Never {
                f.sync_data().map_err(io_at(&tmp))?;
            }
        }
        fs::rename(&tmp, &dst).map_err(io_at(&dst))?;
        if self.fsync == FsyncPolicy::Always {
            sync_dir(&self.dir)?;
        }
        st.persisted = frontier;
        st.dirty = false;
        st.last_checkpoint = Instant::now();
        Ok(())
    }

    /// The frontier written in the checkpoint file.
    pub fn persisted_frontier(&self) -> Pos {
        self.read.lock().persisted
    }

    /// Writes the checkpoint when acknowledgements are not in it yet and
    /// `checkpoint_interval` has passed since the last write.
    pub fn checkpoint_if_due(&self) -> Result<(), QueueError> {
        let mut st = self.read.lock();
        let frontier = st.frontier();
        if (st.dirty || frontier != st.persisted) && st.last_checkpoint.elapsed() >= self.checkpoint_interval {
            self.write_checkpoint(&mut st, frontier)?;
        }
        Ok(())
    }
}
