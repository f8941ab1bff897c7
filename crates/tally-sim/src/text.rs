//! Item and client texts as hash keys: short ones packed into an integer.

/// A text as a hash key: shorter than 16 bytes (most words and ids), its bytes and length
/// packed into a `u128`, so hashing and comparing it touch one integer; else the text.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Text {
    /// A text of fewer than 16 bytes, as [`pack`] packs it.
    Short(u128),
    /// A longer text.
    Long(Box<str>),
}

impl Text {
    pub(crate) fn new(text: &str) -> Self {
        pack(text).map_or_else(|| Self::Long(text.into()), Self::Short)
    }

    /// Calls `f` with the text.
    pub(crate) fn with_str<R>(&self, f: impl FnOnce(&str) -> R) -> R {
        match self {
            Self::Short(key) => {
                let key = key.to_le_bytes();
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
#[inline]
pub(crate) fn pack(text: &str) -> Option<u128> {
    let bytes = text.as_bytes();
    let len = u8::try_from(bytes.len()).ok().filter(|&len| len < 16)?;
    let mut key = [0u8; 16];
    key[..bytes.len()].copy_from_slice(bytes);
    key[15] = len;
    Some(u128::from_le_bytes(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_round_trip() {
        for text in ["", "u1", "fifteen bytes!!", "sixteen bytes!!!", "é", "a\0"] {
            assert_eq!(Text::new(text).with_str(str::to_owned), text);
            assert_eq!(Text::new(text).into_string(), text);
        }
        assert_eq!(
            Text::new("fifteen bytes!!"),
            Text::Short(pack("fifteen bytes!!").unwrap())
        );
        assert!(matches!(Text::new("sixteen bytes!!!"), Text::Long(_)));
        assert_ne!(Text::new("a"), Text::new("a\0"));
    }
}
