//! The algorithms of grpo-fast, free of any Python type.
//!
//! The binding crate (`rust/python`) only converts arguments and results; every
//! computation lives here so that it can be tested, benchmarked and fuzzed from
//! plain Rust.

pub mod advantage;
pub mod baseline;
pub mod error;
pub mod extract;
pub mod group;
pub mod math;
pub mod names;
pub mod parallel;
pub mod process;
pub mod reward;
pub mod sandbox;
pub mod steps;
pub mod verify;

pub use error::CoreError;
