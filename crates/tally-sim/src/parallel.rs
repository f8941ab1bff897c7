//! Deterministic parallel simulation of many clients in fixed chunks.
//!
//! A job over many clients is split into fixed-size chunks run in parallel with rayon. Every
//! chunk draws from its own ChaCha20 stream of one key drawn from the caller's generator, so the
//! result depends on the caller's generator only, never on the number of threads.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// Clients per chunk of a parallel job.
pub(crate) const CLIENTS_PER_CHUNK: usize = 4096;

/// Draws the 256-bit key of a job's chunk streams from the caller's generator.
pub(crate) fn draw_key(rng: &mut dyn Rng) -> [u8; 32] {
    let mut key = [0u8; 32];
    for word in key.chunks_exact_mut(8) {
        word.copy_from_slice(&rng.next_u64().to_le_bytes());
    }
    key
}

/// The generator of chunk `chunk` of a job keyed by `key`.
pub(crate) fn chunk_rng(key: [u8; 32], chunk: usize) -> ChaCha20Rng {
    let mut rng = ChaCha20Rng::from_seed(key);
    rng.set_stream(chunk as u64);
    rng
}
