//! Support for the fault-injection suite (`tests/it/faults/`): an emulator process of the test's
//! own to pause, kill and restart ([`own_emulator`]); the process function "killed" at a chosen
//! step by wrappers of the store and the queues ([`kill`]); event sources and providers that
//! survive faults ([`sources`]); and the counts each test observed ([`report`], rendered into
//! `docs/faults.md` by `make fault-table`).

pub mod kill;
pub mod own_emulator;
pub mod report;
pub mod sources;

pub use own_emulator::OwnEmulator;
