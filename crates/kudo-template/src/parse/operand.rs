//! Operands: the terms of a command (fields, variables, literals,
//! parenthesised pipelines) and the field chains that follow them.

use super::helpers::{describe, describe_arg, number};
use super::{ParseError, Parser, perr};
use crate::ast::{Arg, Span};
use crate::lex::{Tok, Token};

impl Parser<'_> {
    /// A term followed by an optional field chain.
    pub(super) fn operand(&mut self, context: &str) -> Result<Arg, ParseError> {
        let Some(tok) = self.next() else {
            return perr(self.last_pos(), format!("unexpected EOF in {context}"));
        };
        let span = Span {
            start: tok.pos,
            end: tok.end,
        };
        let term = match tok.kind {
            Tok::Dot => Arg::Dot(span),
            Tok::Field(name) => {
                let mut fields = vec![name];
                let end = self.field_chain(&mut fields, tok.end);
                return Ok(Arg::Field(
                    fields,
                    Span {
                        start: tok.pos,
                        end,
                    },
                ));
            }
            Tok::Variable(name) => {
                if !self.vars.contains(&name) {
                    return perr(tok.pos, format!("undefined variable {name:?}"));
                }
                let mut fields = Vec::new();
                let end = self.field_chain(&mut fields, tok.end);
                return Ok(Arg::Var(
                    name,
                    fields,
                    Span {
                        start: tok.pos,
                        end,
                    },
                ));
            }
            Tok::LeftParen => {
                self.enter(tok.pos)?;
                let pipe = self.pipeline("parenthesized pipeline", false)?;
                self.depth -= 1;
                match self.next() {
                    Some(Token {
                        kind: Tok::RightParen,
                        end,
                        ..
                    }) => {
                        let mut fields = Vec::new();
                        let end = self.field_chain(&mut fields, end);
                        return Ok(Arg::Sub(
                            Box::new(pipe),
                            fields,
                            Span {
                                start: tok.pos,
                                end,
                            },
                        ));
                    }
                    _ => return perr(tok.pos, "unclosed left paren"),
                }
            }
            Tok::Str(s) => Arg::Str(s, span),
            Tok::Char(c) => Arg::Int(c, span),
            Tok::Number(text) => number(&text, span)?,
            Tok::Ident(name) => match name.as_str() {
                "nil" => Arg::Nil(span),
                "true" => Arg::Bool(true, span),
                "false" => Arg::Bool(false, span),
                "if" | "else" | "end" | "range" | "with" | "define" | "template" | "block"
                | "break" | "continue" => {
                    return perr(tok.pos, format!("unexpected keyword {name:?} in {context}"));
                }
                _ => {
                    let Some(def) = (self.lookup)(&name) else {
                        return perr(tok.pos, format!("function {name:?} not defined"));
                    };
                    Arg::Func(name, def, span)
                }
            },
            other => {
                return perr(
                    tok.pos,
                    format!("unexpected {} in {context}", describe(&other)),
                );
            }
        };
        if let Some(t) = self.peek()
            && matches!(t.kind, Tok::Field(_))
            && t.pos == span.end
        {
            return perr(
                t.pos,
                format!("unexpected . after term {:?}", describe_arg(&term)),
            );
        }
        Ok(term)
    }

    /// Consumes `.a.b` tokens adjacent to the previous token.
    fn field_chain(&mut self, fields: &mut Vec<String>, mut end: usize) -> usize {
        while let Some(Token {
            kind: Tok::Field(name),
            pos,
            end: e,
        }) = self.peek().cloned()
        {
            if pos != end {
                break;
            }
            fields.push(name);
            end = e;
            self.pos += 1;
        }
        end
    }
}
