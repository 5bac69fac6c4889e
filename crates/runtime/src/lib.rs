//! sluice-runtime
