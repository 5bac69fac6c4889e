//! sluice-api
