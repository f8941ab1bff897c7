//! TrieHH.
