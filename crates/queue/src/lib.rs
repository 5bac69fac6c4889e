//! Durable segmented append-only log: the persisted queue of a pipeline.
