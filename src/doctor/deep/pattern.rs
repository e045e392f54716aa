//! What the deep self-test writes: compressible patterns and random bytes
//! ([`fill`]), and the first byte that came back wrong ([`first_difference`]).

/// What is written: a ramp and constant tiles (what compression engines squeeze),
/// pseudo-random bytes (what they cannot), and cleared memory with tiles as large
/// as compression pages (what they squeeze most).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pattern {
    Ramp,
    Tiles,
    Random,
    /// A [`ZERO_REGION`]-byte zero region, the rest constant tiles of
    /// [`SMALL_PAGE`] bytes below [`LARGE_PAGE`] of the packed bytes and of
    /// [`LARGE_PAGE`] bytes from there on.
    Cleared,
}

pub(crate) const PATTERNS: [Pattern; 4] = [
    Pattern::Ramp,
    Pattern::Tiles,
    Pattern::Random,
    Pattern::Cleared,
];

/// What every resource carries, for the checks' `seen`.
pub(crate) const DATA: &str = "ramp, 4 KiB tiles, random, 64 KiB of zeros, 64 KiB and 2 MiB tiles";

/// The zero region of [`Pattern::Cleared`]: cleared memory, which compression
/// engines squeeze most (and which no other pattern writes).
pub(crate) const ZERO_REGION: usize = 64 << 10;
/// A compression page: [`Pattern::Cleared`]'s tiles below [`LARGE_PAGE`].
pub(crate) const SMALL_PAGE: usize = 64 << 10;
/// [`Pattern::Cleared`]'s tiles from this packed offset on are this large.
pub(crate) const LARGE_PAGE: usize = 2 << 20;

impl Pattern {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Pattern::Ramp => "a ramp",
            Pattern::Tiles => "constant 4 KiB tiles",
            Pattern::Random => "random bytes",
            Pattern::Cleared => "a 64 KiB zero region and 64 KiB and 2 MiB tiles",
        }
    }
}

/// The value of constant tile `t` for `seed`: never 0 (zeros are the zero
/// region's), and never the value of the tile before or after it.
fn tile_value(t: u64, seed: u64) -> u8 {
    match t.wrapping_mul(0x9d).wrapping_add(seed) as u8 {
        0 => 0xff,
        v => v,
    }
}

/// Bytes of the random block [`fill`] repeats: odd-sized, so that no row pitch,
/// plane offset or level offset lines the repeats up with the image.
pub(crate) const RANDOM_BLOCK: usize = (1 << 20) + 4093;

/// Copies `block` over `out` again and again (memcpy speed even in a debug build).
fn repeat(block: &[u8], out: &mut [u8]) {
    for chunk in out.chunks_mut(block.len()) {
        chunk.copy_from_slice(&block[..chunk.len()]);
    }
}

/// Fills `out` with `p`; `seed` differs per direction so that data left over from
/// the other direction never passes. The ramp repeats every 256 bytes, the tiles
/// are 4 KiB of one value each, the random bytes repeat every [`RANDOM_BLOCK`]
/// bytes (far more than any compression block). [`Pattern::Cleared`]: the zero
/// region starts at 0 for an even seed and at [`ZERO_REGION`] for an odd one (the
/// two directions' seeds differ in parity, so zeros left over from one never pass
/// for the other's), tiles of [`SMALL_PAGE`] then [`LARGE_PAGE`] bytes around it.
pub(crate) fn fill(p: Pattern, seed: u64, out: &mut [u8]) {
    match p {
        Pattern::Ramp => {
            let period: Vec<u8> = (0..256u64).map(|i| i.wrapping_add(seed) as u8).collect();
            repeat(&period, out);
        }
        Pattern::Tiles => {
            for (t, tile) in out.chunks_mut(4096).enumerate() {
                tile.fill((t as u64).wrapping_mul(0x9d).wrapping_add(seed) as u8);
            }
        }
        Pattern::Random => {
            // xorshift64*: fast and good enough to defeat any compression.
            let mut block = vec![0u8; RANDOM_BLOCK.min(out.len())];
            let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
            for chunk in block.chunks_mut(8) {
                s ^= s >> 12;
                s ^= s << 25;
                s ^= s >> 27;
                let v = s.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes();
                chunk.copy_from_slice(&v[..chunk.len()]);
            }
            repeat(&block, out);
        }
        Pattern::Cleared => {
            let (mut at, mut t) = (0, 0u64);
            while at < out.len() {
                let size = if at < LARGE_PAGE {
                    SMALL_PAGE
                } else {
                    LARGE_PAGE
                };
                let end = (at + size).min(out.len());
                out[at..end].fill(tile_value(t, seed));
                (at, t) = (end, t + 1);
            }
            let zero = (seed as usize & 1) * ZERO_REGION;
            let len = out.len();
            out[zero.min(len)..(zero + ZERO_REGION).min(len)].fill(0);
        }
    }
}

/// The first byte where `got` differs from `want` (offset, expected, got) and how
/// many differ.
pub(crate) fn first_difference(want: &[u8], got: &[u8]) -> Option<(usize, u8, u8, usize)> {
    if want == got {
        return None;
    }
    let mut first = None;
    let mut count = 0;
    for (i, (w, g)) in want.iter().zip(got).enumerate() {
        if w != g {
            count += 1;
            first.get_or_insert((i, *w, *g));
        }
    }
    first.map(|(i, w, g)| (i, w, g, count))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_differ_per_direction_and_are_found() {
        for p in PATTERNS {
            let (mut a, mut b) = (vec![0u8; 10000], vec![0u8; 10000]);
            fill(p, 0x11, &mut a);
            fill(p, 0x5a, &mut b);
            assert!(first_difference(&a, &b).is_some(), "{p:?}");
        }
        let mut a = vec![0u8; 100];
        fill(Pattern::Ramp, 0, &mut a);
        let mut b = a.clone();
        b[42] ^= 0xff;
        b[77] = 0;
        assert_eq!(first_difference(&a, &b), Some((42, 42, 42 ^ 0xff, 2)));
    }

    #[test]
    fn cleared_memory_and_large_tiles_are_written() {
        let n = 4 << 20;
        let runs = |b: &[u8]| {
            let mut out = Vec::new();
            let mut i = 0;
            while i < b.len() {
                let j = i + b[i..].iter().take_while(|&&x| x == b[i]).count();
                out.push((i, j - i, b[i]));
                i = j;
            }
            out
        };
        // The two directions' seeds of every round differ in parity.
        for i in 0..PATTERNS.len() as u64 {
            assert_ne!((0x11 + i) & 1, (0x5a + i) & 1);
        }
        for (seed, zero_at) in [(0x14u64, 0), (0x5d, ZERO_REGION)] {
            let mut b = vec![0u8; n];
            fill(Pattern::Cleared, seed, &mut b);
            let r = runs(&b);
            // Exactly one zero run, 64 KiB long, where the seed puts it.
            let zeros: Vec<_> = r.iter().filter(|x| x.2 == 0).collect();
            assert_eq!(zeros, [&(zero_at, ZERO_REGION, 0)], "seed {seed:#x}");
            // The rest: 64 KiB tiles up to 2 MiB, then one 2 MiB tile.
            assert!(r.iter().all(|&(at, len, _)| if at < LARGE_PAGE {
                len == SMALL_PAGE
            } else {
                len == LARGE_PAGE
            }));
            assert_eq!(r.len(), LARGE_PAGE / SMALL_PAGE + 1);
        }
        // Zeros left over from the other direction never pass.
        let (mut a, mut b) = (vec![0u8; n], vec![0u8; n]);
        fill(Pattern::Cleared, 0x14, &mut a);
        fill(Pattern::Cleared, 0x5d, &mut b);
        assert!(a[..ZERO_REGION] != b[..ZERO_REGION]);
        assert!(a[ZERO_REGION..2 * ZERO_REGION] != b[ZERO_REGION..2 * ZERO_REGION]);
        // No other pattern has a uniform run longer than 4 KiB.
        for p in [Pattern::Ramp, Pattern::Tiles, Pattern::Random] {
            let mut b = vec![0u8; n];
            fill(p, 0x12, &mut b);
            assert!(runs(&b).iter().all(|r| r.1 <= 4096), "{p:?}");
        }
    }
}
