//! Reports made of several messages, for the shuffle model: a device may send many messages
//! (Balcer–Cheu's one per domain element plus its item, Ghazi et al.'s several), and the
//! shuffler must permute the **messages** of all devices together, so that the analyzer
//! cannot tell which came from the same device.
//!
//! A report type says how it splits into messages and how one message stands alone as a
//! report ([`MultiMessage`]): behind [`super::Shuffled`] every device's report is split
//! before the uniform permutation and the analyzer (the round's own aggregator) absorbs one
//! message at a time. A single-message report is its own one message ([`SingleMessage`]). A
//! list of integer messages has one wire encoding ([`encode_messages`], [`decode_messages`]):
//! decimal messages in non-decreasing order separated by commas (a device's messages are a
//! multiset, whose one spelling is sorted).
//!
//! # Privacy
//!
//! The split is what makes a multi-message guarantee hold behind the shuffler: the premise of
//! the shuffle model is that the analyzer sees the multiset of **all** messages, not bundles
//! per device. Within a report the order carries nothing either: it is sorted on the wire.

/// A report as the messages a shuffler separates.
pub trait MultiMessage: Sized {
    /// One message.
    type Message: Clone;

    /// The report's messages (in no meaningful order: the shuffler permutes them).
    fn into_messages(self) -> Vec<Self::Message>;

    /// The report made of `message` alone, as the analyzer behind the shuffler absorbs it:
    /// absorbing a report must count exactly what absorbing its messages one by one counts.
    fn from_message(message: Self::Message) -> Self;
}

/// A report that is one message.
pub trait SingleMessage {}

impl<T: SingleMessage + Clone> MultiMessage for T {
    type Message = T;

    fn into_messages(self) -> Vec<T> {
        vec![self]
    }

    fn from_message(message: T) -> T {
        message
    }
}

/// A list of messages.
impl<T: Clone> MultiMessage for Vec<T> {
    type Message = T;

    fn into_messages(self) -> Vec<T> {
        self
    }

    fn from_message(message: T) -> Self {
        vec![message]
    }
}

impl SingleMessage for u32 {}

impl SingleMessage for String {}

impl SingleMessage for super::Ballot {}

/// The wire encoding of a list of integer messages: each in decimal (as [`u32`]'s
/// [`super::WireReport`]), in non-decreasing order, separated by commas.
pub fn encode_messages(messages: impl IntoIterator<Item = u32>) -> String {
    let mut text = String::new();
    for message in messages {
        if !text.is_empty() {
            text.push(',');
        }
        text.push_str(&message.to_string());
    }
    text
}

/// The messages `text` spells in the encoding of [`encode_messages`], or `None` if it is not
/// the one spelling of a non-empty list: an empty list, a message that is not canonical
/// decimal, an empty item or messages out of order are all refused. The list is at most
/// `text.len() / 2 + 1` long, so a caller that bounds the upload bounds the list.
pub fn decode_messages(text: &str) -> Option<Vec<u32>> {
    let mut messages: Vec<u32> = Vec::new();
    for item in text.split(',') {
        let message = <u32 as super::WireReport>::decode(item.to_owned())?;
        if messages.last().is_some_and(|&last| last > message) {
            return None;
        }
        messages.push(message);
    }
    Some(messages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_list_has_one_spelling() {
        for good in [vec![0], vec![1, 1, 2], vec![0, 7, 4_294_967_295]] {
            let text = encode_messages(good.iter().copied());
            assert_eq!(decode_messages(&text), Some(good), "{text}");
        }
        assert_eq!(encode_messages([3, 3, 5]), "3,3,5");
        for bad in [
            "", ",", "1,", ",1", "1,,2", "2,1", "01", "1, 2", "1;2", "-1", "1,x",
        ] {
            assert_eq!(decode_messages(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_single_report_is_one_message() {
        assert_eq!(7_u32.into_messages(), [7]);
        assert_eq!(u32::from_message(7), 7);
        assert_eq!("m".to_owned().into_messages(), ["m"]);
    }
}
