//! Parser: tokens to a parse tree, checking variables and function names as
//! Go's `text/template/parse` does.

use std::collections::HashMap;

use crate::ast::{BranchKind, Cmd, List, Node, Pipe, Span};
use crate::funcs::FuncDef;
use crate::lex::{Tok, Token};

mod helpers;
mod operand;
use helpers::describe;

/// A parse error at a byte offset.
#[derive(Debug)]
pub struct ParseError {
    pub pos: usize,
    pub message: String,
}

/// Result of parsing: the main body and the `define`d templates.
pub struct Parsed {
    pub root: List,
    pub defines: HashMap<String, List>,
}

/// How a list of nodes ended.
enum Stop {
    Eof,
    End(usize),
    Else(usize),
}

const MAX_DEPTH: usize = 200;

/// Parses tokens; `lookup` resolves function names.
pub fn parse(
    tokens: Vec<Token>,
    lookup: &dyn Fn(&str) -> Option<&'static FuncDef>,
) -> Result<Parsed, ParseError> {
    let mut p = Parser {
        tokens,
        pos: 0,
        vars: vec!["$".to_string()],
        range_depth: 0,
        depth: 0,
        defines: HashMap::new(),
        lookup,
    };
    let (root, stop) = p.list(true)?;
    match stop {
        Stop::Eof => Ok(Parsed {
            root,
            defines: p.defines,
        }),
        Stop::End(pos) => perr(pos, "unexpected {{end}}"),
        Stop::Else(pos) => perr(pos, "unexpected {{else}}"),
    }
}

fn perr<T>(pos: usize, message: impl Into<String>) -> Result<T, ParseError> {
    Err(ParseError {
        pos,
        message: message.into(),
    })
}

struct Parser<'f> {
    tokens: Vec<Token>,
    pos: usize,
    vars: Vec<String>,
    range_depth: usize,
    depth: usize,
    defines: HashMap<String, List>,
    lookup: &'f dyn Fn(&str) -> Option<&'static FuncDef>,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn peek_kind(&self) -> Option<&Tok> {
        self.peek().map(|t| &t.kind)
    }

    fn next(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn last_pos(&self) -> usize {
        self.tokens
            .get(self.pos.saturating_sub(1))
            .map(|t| t.pos)
            .unwrap_or(0)
    }

    fn expect_right(&mut self, context: &str) -> Result<usize, ParseError> {
        match self.next() {
            Some(Token {
                kind: Tok::RightDelim,
                end,
                ..
            }) => Ok(end),
            Some(t) => perr(
                t.pos,
                format!("unexpected {} in {context}", describe(&t.kind)),
            ),
            None => perr(self.last_pos(), format!("unclosed action in {context}")),
        }
    }

    /// Parses nodes until EOF, `{{end}}` or `{{else}}` (the latter two consumed
    /// up to and including the keyword; `else` leaves the rest of its action).
    fn list(&mut self, top: bool) -> Result<(List, Stop), ParseError> {
        let mut nodes = Vec::new();
        while let Some(tok) = self.next() {
            match tok.kind {
                Tok::Text(text) => {
                    let span = Span {
                        start: tok.pos,
                        end: tok.end,
                    };
                    nodes.push(Node::Text(text, span));
                }
                Tok::LeftDelim => {
                    let kw = match self.peek_kind() {
                        Some(Tok::Ident(name)) => Some(name.clone()),
                        _ => None,
                    };
                    match kw.as_deref() {
                        Some("end") => {
                            let p = self.next().map(|t| t.pos).unwrap_or(tok.pos);
                            self.expect_right("end")?;
                            return Ok((nodes, Stop::End(p)));
                        }
                        Some("else") => {
                            let p = self.next().map(|t| t.pos).unwrap_or(tok.pos);
                            return Ok((nodes, Stop::Else(p)));
                        }
                        Some("if") => nodes.push(self.branch(BranchKind::If, tok.pos)?),
                        Some("with") => nodes.push(self.branch(BranchKind::With, tok.pos)?),
                        Some("range") => nodes.push(self.branch(BranchKind::Range, tok.pos)?),
                        Some("define") => {
                            if !top {
                                return perr(tok.pos, "{{define}} must be at the top level");
                            }
                            self.define(tok.pos)?;
                        }
                        Some("block") => nodes.push(self.block(tok.pos)?),
                        Some("template") => nodes.push(self.template(tok.pos)?),
                        Some(word @ ("break" | "continue")) => {
                            let is_break = word == "break";
                            self.next();
                            if self.range_depth == 0 {
                                return perr(
                                    tok.pos,
                                    format!("{{{{{word}}}}} outside {{{{range}}}}"),
                                );
                            }
                            self.expect_right(word)?;
                            nodes.push(if is_break {
                                Node::Break
                            } else {
                                Node::Continue
                            });
                        }
                        _ => {
                            let pipe = self.pipeline("command", false)?;
                            self.expect_right("command")?;
                            nodes.push(Node::Action(pipe));
                        }
                    }
                }
                other => return perr(tok.pos, format!("unexpected {}", describe(&other))),
            }
        }
        Ok((nodes, Stop::Eof))
    }

    fn enter(&mut self, pos: usize) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return perr(pos, "template nests too deeply");
        }
        Ok(())
    }

    /// if / with / range, after `{{` with the keyword next.
    fn branch(&mut self, kind: BranchKind, start: usize) -> Result<Node, ParseError> {
        self.enter(start)?;
        let kw = self.next().map(|t| t.pos).unwrap_or(start);
        let scope = self.vars.len();
        let context = match kind {
            BranchKind::If => "if",
            BranchKind::With => "with",
            BranchKind::Range => "range",
        };
        let pipe = self.pipeline(context, kind == BranchKind::Range)?;
        if pipe.cmds.is_empty() {
            return perr(kw, format!("missing value for {context}"));
        }
        self.expect_right(context)?;
        if kind == BranchKind::Range {
            self.range_depth += 1;
        }
        let after_pipe = self.vars.len();
        let (then, stop) = self.list(false)?;
        // Variables declared in the body are not visible in the else branch.
        self.vars.truncate(after_pipe);
        if kind == BranchKind::Range {
            self.range_depth -= 1;
        }
        let otherwise = match stop {
            Stop::End(_) => None,
            Stop::Eof => {
                return perr(
                    start,
                    format!("unexpected EOF: {{{{{context}}}}} has no {{{{end}}}}"),
                );
            }
            Stop::Else(else_pos) => {
                // `else if` / `else with` chain: a nested branch sharing our {{end}}.
                let chained = match self.peek_kind() {
                    Some(Tok::Ident(k)) if k == "if" && kind == BranchKind::If => {
                        Some(BranchKind::If)
                    }
                    Some(Tok::Ident(k)) if k == "with" && kind == BranchKind::With => {
                        Some(BranchKind::With)
                    }
                    _ => None,
                };
                if let Some(ck) = chained {
                    Some(vec![self.branch(ck, else_pos)?])
                } else {
                    self.expect_right("else")?;
                    let (other, stop) = self.list(false)?;
                    match stop {
                        Stop::End(_) => Some(other),
                        Stop::Else(p) => return perr(p, "expected end; found {{else}}"),
                        Stop::Eof => {
                            return perr(
                                start,
                                format!("unexpected EOF: {{{{{context}}}}} has no {{{{end}}}}"),
                            );
                        }
                    }
                }
            }
        };
        self.vars.truncate(scope);
        self.depth -= 1;
        Ok(Node::Branch {
            kind,
            pipe,
            then,
            otherwise,
        })
    }

    fn template_name(&mut self, context: &str) -> Result<String, ParseError> {
        match self.next() {
            Some(Token {
                kind: Tok::Str(name),
                ..
            }) => Ok(name),
            Some(t) => perr(
                t.pos,
                format!("unexpected {} in {context} clause", describe(&t.kind)),
            ),
            None => perr(self.last_pos(), format!("missing name in {context} clause")),
        }
    }

    fn define(&mut self, start: usize) -> Result<(), ParseError> {
        self.next();
        let name = self.template_name("define")?;
        self.expect_right("define")?;
        let saved = std::mem::replace(&mut self.vars, vec!["$".to_string()]);
        let saved_range = std::mem::replace(&mut self.range_depth, 0);
        let (body, stop) = self.list(false)?;
        self.vars = saved;
        self.range_depth = saved_range;
        match stop {
            Stop::End(_) => {}
            Stop::Else(p) => return perr(p, "unexpected {{else}} in define"),
            Stop::Eof => return perr(start, "unexpected EOF: {{define}} has no {{end}}"),
        }
        self.defines.insert(name, body);
        Ok(())
    }

    fn block(&mut self, start: usize) -> Result<Node, ParseError> {
        self.next();
        let name = self.template_name("block")?;
        let pipe = self.pipeline("block", false)?;
        let end = self.expect_right("block")?;
        let saved = std::mem::replace(&mut self.vars, vec!["$".to_string()]);
        let saved_range = std::mem::replace(&mut self.range_depth, 0);
        let (body, stop) = self.list(false)?;
        self.vars = saved;
        self.range_depth = saved_range;
        match stop {
            Stop::End(_) => {}
            Stop::Else(p) => return perr(p, "unexpected {{else}} in block"),
            Stop::Eof => return perr(start, "unexpected EOF: {{block}} has no {{end}}"),
        }
        self.defines.insert(name.clone(), body);
        Ok(Node::Template {
            span: Span { start, end },
            name,
            pipe: if pipe.cmds.is_empty() {
                None
            } else {
                Some(pipe)
            },
        })
    }

    fn template(&mut self, start: usize) -> Result<Node, ParseError> {
        self.next();
        let name = self.template_name("template")?;
        let pipe = self.pipeline("template", false)?;
        let end = self.expect_right("template")?;
        Ok(Node::Template {
            span: Span { start, end },
            name,
            pipe: if pipe.cmds.is_empty() {
                None
            } else {
                Some(pipe)
            },
        })
    }

    /// Parses a pipeline up to (not including) `}}` or `)`.
    fn pipeline(&mut self, context: &str, allow_two_vars: bool) -> Result<Pipe, ParseError> {
        let start = self.peek().map(|t| t.pos).unwrap_or(0);
        let mut vars = Vec::new();
        let mut assign = false;
        // Declarations: `$x :=`, `$x =`, `$i, $v :=`.
        if let Some(Tok::Variable(_)) = self.peek_kind() {
            let save = self.pos;
            let mut names = Vec::new();
            while let Some(Tok::Variable(n)) = self.next().map(|t| t.kind) {
                names.push(n);
                match self.peek_kind() {
                    Some(Tok::Comma) if allow_two_vars && names.len() < 2 => {
                        self.next();
                    }
                    Some(Tok::Declare) => {
                        self.next();
                        vars = names;
                        break;
                    }
                    Some(Tok::Assign) if names.len() == 1 => {
                        let tpos = self.peek().map(|t| t.pos).unwrap_or(start);
                        self.next();
                        if !self.vars.contains(&names[0]) {
                            return perr(tpos, format!("undefined variable {:?}", names[0]));
                        }
                        vars = names;
                        assign = true;
                        break;
                    }
                    _ => break,
                }
            }
            if vars.is_empty() {
                self.pos = save;
            }
        }
        let mut cmds = Vec::new();
        loop {
            match self.peek_kind() {
                None => return perr(self.last_pos(), format!("unclosed action in {context}")),
                Some(Tok::RightDelim) | Some(Tok::RightParen) => break,
                _ => {}
            }
            let cmd = self.command(context)?;
            cmds.push(cmd);
            match self.peek_kind() {
                Some(Tok::Pipe) => {
                    let p = self.next().map(|t| t.pos).unwrap_or(0);
                    if matches!(
                        self.peek_kind(),
                        Some(Tok::RightDelim) | Some(Tok::RightParen) | None
                    ) {
                        return perr(p, "missing command after |");
                    }
                }
                _ => break,
            }
        }
        if !vars.is_empty() && cmds.is_empty() {
            return perr(start, format!("missing value for {context}"));
        }
        if !assign {
            self.vars.extend(vars.iter().cloned());
        }
        let end = self
            .tokens
            .get(self.pos.saturating_sub(1))
            .map(|t| t.end)
            .unwrap_or(start);
        Ok(Pipe {
            span: Span { start, end },
            vars,
            assign,
            cmds,
        })
    }

    fn command(&mut self, context: &str) -> Result<Cmd, ParseError> {
        let start = self.peek().map(|t| t.pos).unwrap_or(0);
        let mut args = Vec::new();
        loop {
            match self.peek_kind() {
                None | Some(Tok::RightDelim) | Some(Tok::RightParen) | Some(Tok::Pipe) => break,
                _ => {}
            }
            args.push(self.operand(context)?);
        }
        if args.is_empty() {
            return perr(start, format!("empty command in {context}"));
        }
        let end = args.last().map(|a| a.span().end).unwrap_or(start);
        Ok(Cmd {
            span: Span { start, end },
            args,
        })
    }
}
