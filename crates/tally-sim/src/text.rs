//! Item and client texts as hash keys: short ones packed into an integer.

/// A text as a hash key: shorter than 16 bytes (most words and ids), its bytes and length
/// packed into two words (a [`pack`]ed `u128`, held as words so that a `Text` takes 24
/// bytes rather than the 32 a `u128`'s alignment would make it), so hashing and comparing
/// it touch two integers; else the text.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Text {
    /// A text of fewer than 16 bytes, as [`pack`] packs it: low word, high word.
    Short([u64; 2]),
    /// A longer text.
    Long(Box<str>),
}

impl Text {
    /// The short text [`pack`] packed into `key`.
    pub(crate) fn from_packed(key: u128) -> Self {
        // The casts keep the low and the high 64 bits, as meant.
        Self::Short([key as u64, (key >> 64) as u64])
    }

    /// Calls `f` with the text.
    pub(crate) fn with_str<R>(&self, f: impl FnOnce(&str) -> R) -> R {
        match self {
            Self::Short([low, high]) => {
                let key = (u128::from(*high) << 64 | u128::from(*low)).to_le_bytes();
                // Unwrap safety: the bytes were a whole &str.
                f(std::str::from_utf8(&key[..usize::from(key[15])]).expect("UTF-8 text"))
            }
            Self::Long(text) => f(text),
        }
    }

    pub(crate) fn into_string(self) -> String {
        match self {
            Self::Short(_) => self.with_str(str::to_owned),
            Self::Long(text) => text.into_string(),
        }
    }
}

/// `text`'s bytes, zero padded, with its length in the last byte, if it is shorter than 16
/// bytes (the length keeps `a` and `a\0` apart).
///
/// The bytes are read as (possibly overlapping) whole words rather than copied into a buffer
/// and read back, which would stall the load on the byte-wise stores.
#[inline]
pub(crate) fn pack(text: &str) -> Option<u128> {
    let bytes = text.as_bytes();
    let n = bytes.len();
    let word = |at: usize| u64::from_le_bytes(*bytes[at..].first_chunk::<8>().expect("8 bytes"));
    let half = |at: usize| {
        u64::from(u32::from_le_bytes(
            *bytes[at..].first_chunk::<4>().expect("4 bytes"),
        ))
    };
    let (low, high) = match n {
        // Unwrap safety (in `word` and `half`): each arm reads only within the text.
        16.. => return None,
        8..=15 => {
            // The last word's top n − 8 bytes are bytes 8..n.
            let shift = 8 * (16 - n as u32);
            (word(0), word(n - 8).checked_shr(shift).unwrap_or(0))
        }
        4..=7 => (half(0) | (half(n - 4) << (8 * (n as u32 - 4))), 0),
        _ => (
            bytes
                .iter()
                .enumerate()
                .fold(0, |key, (i, &b)| key | (u64::from(b) << (8 * i))),
            0,
        ),
    };
    Some(u128::from(low) | (u128::from(high) << 64) | ((n as u128) << 120))
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Text {
        fn new(text: &str) -> Self {
            pack(text).map_or_else(|| Self::Long(text.into()), Self::from_packed)
        }
    }

    #[test]
    fn texts_round_trip() {
        for text in ["", "u1", "fifteen bytes!!", "sixteen bytes!!!", "é", "a\0"] {
            assert_eq!(Text::new(text).with_str(str::to_owned), text);
            assert_eq!(Text::new(text).into_string(), text);
        }
        assert_eq!(
            Text::new("fifteen bytes!!"),
            Text::from_packed(pack("fifteen bytes!!").unwrap())
        );
        assert_eq!(size_of::<Text>(), 24);
        assert!(matches!(Text::new("sixteen bytes!!!"), Text::Long(_)));
        assert_ne!(Text::new("a"), Text::new("a\0"));
    }

    #[test]
    fn pack_places_every_byte_and_the_length() {
        let text = "abcdefghijklmnopq";
        for n in 0..=16 {
            let packed = pack(&text[..n]);
            if n == 16 {
                assert_eq!(packed, None);
                continue;
            }
            let mut want = [0u8; 16];
            want[..n].copy_from_slice(&text.as_bytes()[..n]);
            want[15] = n as u8;
            assert_eq!(packed, Some(u128::from_le_bytes(want)), "length {n}");
        }
    }
}
