//! The structure of YAML text as a list of tokens without scalar text:
//! what a parameter value may not change.

use std::ops::Range;

use granit_parser::{Event, Parser, Span};

/// A structural YAML token, without the text of scalars.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Token {
    DocumentStart {
        explicit: bool,
    },
    DocumentEnd,
    MappingStart {
        anchored: bool,
        tagged: bool,
        flow: bool,
    },
    MappingEnd,
    SequenceStart {
        anchored: bool,
        tagged: bool,
        flow: bool,
    },
    SequenceEnd,
    Scalar {
        anchored: bool,
        tagged: bool,
    },
    Alias,
    Comment,
    End,
}

impl Token {
    pub(super) fn added(self) -> &'static str {
        match self {
            Token::DocumentStart { .. } | Token::DocumentEnd => "starts a new YAML document",
            Token::MappingStart { .. } | Token::MappingEnd => "adds a mapping (keys) to the YAML",
            Token::SequenceStart { .. } | Token::SequenceEnd => "adds a list to the YAML",
            Token::Scalar { anchored: true, .. } => "adds a YAML anchor",
            Token::Scalar { tagged: true, .. } => "adds a YAML tag",
            Token::Scalar { .. } => "adds a key or value to the YAML",
            Token::Alias => "adds a YAML alias",
            Token::Comment => "starts a YAML comment that hides template text",
            Token::End => "ends the YAML early",
        }
    }
}

/// Structural tokens and where each is.
pub(super) type Skeleton = Vec<(Token, Range<usize>)>;

/// The structural tokens of `text`; a parse error with its byte offset.
pub(super) fn skeleton(text: &str) -> Result<Skeleton, (String, usize)> {
    let mut out = Vec::new();
    for event in Parser::new_from_str(text) {
        let (event, span) = event.map_err(|e| {
            let at = e.marker().byte_offset().unwrap_or(text.len());
            (e.to_string(), at)
        })?;
        let tagged = |tag: &Option<_>| tag.is_some();
        let token = match event {
            Event::StreamStart | Event::StreamEnd => continue,
            Event::DocumentStart(explicit, _) => Token::DocumentStart { explicit },
            Event::DocumentEnd => Token::DocumentEnd,
            Event::MappingStart(style, anchor, tag) => Token::MappingStart {
                anchored: anchor != 0,
                tagged: tagged(&tag),
                flow: style == granit_parser::StructureStyle::Flow,
            },
            Event::MappingEnd => Token::MappingEnd,
            Event::SequenceStart(style, anchor, tag) => Token::SequenceStart {
                anchored: anchor != 0,
                tagged: tagged(&tag),
                flow: style == granit_parser::StructureStyle::Flow,
            },
            Event::SequenceEnd => Token::SequenceEnd,
            Event::Scalar(_, _, anchor, tag) => Token::Scalar {
                anchored: anchor != 0,
                tagged: tagged(&tag),
            },
            Event::Alias(_) | Event::UnresolvedAlias(_) => Token::Alias,
            Event::Comment(..) => Token::Comment,
            // Anchor names (only with an option we do not set) and events
            // a later parser version adds carry no structure of their own.
            _ => continue,
        };
        out.push((token, byte_range(&span)));
    }
    Ok(out)
}

pub(super) fn byte_range(span: &Span) -> Range<usize> {
    span.byte_range().unwrap_or(0..0)
}
