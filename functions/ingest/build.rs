//! Links the `ingest` binary as a position-dependent executable (`-no-pie`).
//!
//! A PIE carries one relative relocation per pointer in its static data (29,000 here: 0.55 MB of
//! `.rela.dyn`) that the loader applies at every start, writing the pages of `.data.rel.ro`.
//! Without PIE the ingest binary goes from 9,385,712 to 8,834,144 bytes and its cold start
//! (spawn → first `next`) from ~2.0 ms to ~1.8 ms (bench `coldstart`, hello-world at ~1.05 ms).
//! The trade: the executable's own image loads at a fixed address (shared libraries, heap and
//! stack stay randomized; RELRO, BIND_NOW and NX are unchanged). Delete this file to go back to
//! PIE; nothing else depends on it. Only the `ingest` binary is affected (not tests, benches or
//! the other functions).

fn main() {
    println!("cargo:rustc-link-arg-bin=ingest=-no-pie");
}
