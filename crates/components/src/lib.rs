//! sluice-components
