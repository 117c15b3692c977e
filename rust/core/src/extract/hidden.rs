//! Text a reader does not see is not text (docs/verify_semantics.md rule
//! 11): markdown strikethrough, HTML comments, struck or invisible elements,
//! footnotes, white or transparent colour, `\phantom` and overlays are
//! blanked before the rules read a completion, so they can neither pay nor
//! void an answer. Visible decoration (`\color{blue}`, `\textcolor{red}`,
//! `<b>`, `<u>`, `\smash`) is blanked too, but only the markup: what it
//! decorates stays and pays.
//!
//! Blanking writes spaces over the bytes (every construct starts and ends at
//! an ASCII byte, so the copy stays UTF-8) and keeps every offset, so an
//! answer found in the copy is the same slice of the original. A text with
//! none of these constructs is not copied.

use std::borrow::Cow;
use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, Input, MatchKind};
use memchr::memmem;

/// The constructs' openings; a hit is only a candidate, read by [`Blanker::at`].
/// Each starts with `~`, `<`, `[` or a backslash.
const TRIGGERS: [&str; 15] = [
    "~~",
    "<",
    "[^",
    "\\color",
    "\\textcolor",
    "\\phantom",
    "\\hphantom",
    "\\vphantom",
    "\\llap",
    "\\rlap",
    "\\clap",
    "\\mathllap",
    "\\mathrlap",
    "\\mathclap",
    "\\smash",
];

/// The names of the commands among the triggers: searched for without their
/// backslash, a byte too common in LaTeX to search for.
fn names() -> &'static AhoCorasick {
    static AC: OnceLock<AhoCorasick> = OnceLock::new();
    AC.get_or_init(|| {
        AhoCorasickBuilder::new()
            .match_kind(MatchKind::LeftmostFirst)
            .build(["color", "phantom", "lap", "smash"])
            .expect("fixed trigger patterns always build")
    })
}

/// Elements whose content is struck out or never shown.
const STRUCK: [&str; 3] = ["s", "del", "strike"];
/// Elements that only decorate what they hold (unless styled invisible).
const DECORATION: [&str; 16] = [
    "b", "strong", "i", "em", "u", "ins", "mark", "span", "div", "p", "font", "small", "big",
    "center", "tt", "code",
];

/// `text` as a reader sees it, with the same byte offsets (see the module doc).
pub(super) fn shown(text: &str) -> Cow<'_, str> {
    let b = text.as_bytes();
    let mut blank = Blanker {
        b,
        out: None,
        no_close: [false; STRUCK.len()],
        para_end: 0,
    };
    // `~`, `<` and `[` are rare: one SIMD search for the three. The commands
    // are found by their names (`\cdot`, `\frac` are no candidates); each
    // search resumes only when the scan has passed its last hit.
    let next = |from: usize, k: Option<usize>| k.map_or(b.len(), |k| from + k);
    let command = |mut from: usize| loop {
        let Some(m) = names().find(Input::new(b).range(from..)) else {
            return b.len();
        };
        // The command whose name this is: `\textcolor`, `\hphantom`, `\mathllap`.
        let start = TRIGGERS.iter().find_map(|t| {
            let s = m.end().checked_sub(t.len())?;
            (s >= from && t.starts_with('\\') && b[s..].starts_with(t.as_bytes())).then_some(s)
        });
        match start {
            Some(s) => return s,
            None => from = m.start() + 1,
        }
    };
    let mut pos = 0;
    let mut punct = next(0, memchr::memchr3(b'~', b'<', b'[', b));
    let mut slash = command(0);
    while pos < b.len() {
        if punct < pos {
            punct = next(pos, memchr::memchr3(b'~', b'<', b'[', &b[pos..]));
        }
        if slash < pos {
            slash = command(pos);
        }
        let k = punct.min(slash);
        if k >= b.len() {
            break;
        }
        // The first trigger in the list that starts here (as a leftmost-first
        // automaton would report it).
        pos = match TRIGGERS
            .iter()
            .position(|t| b[k..].starts_with(t.as_bytes()))
        {
            Some(id) => blank.at(k, id).max(k + 1),
            None => k + 1,
        };
    }
    match blank.out {
        // Only ASCII bytes whole characters were replaced by spaces.
        Some(out) => Cow::Owned(String::from_utf8(out).unwrap_or_else(|_| text.to_owned())),
        None => Cow::Borrowed(text),
    }
}

struct Blanker<'t> {
    b: &'t [u8],
    out: Option<Vec<u8>>,
    /// A struck element without its close: none closes later either.
    no_close: [bool; STRUCK.len()],
    /// The end of the paragraph last looked at (strikethrough stays in one).
    para_end: usize,
}

impl Blanker<'_> {
    fn blank(&mut self, from: usize, to: usize) {
        let out = self.out.get_or_insert_with(|| self.b.to_vec());
        let to = to.min(out.len());
        // Whole characters only: a multi-byte character is blanked byte by byte.
        out[from..to].iter_mut().for_each(|c| *c = b' ');
    }

    /// Reads the construct whose trigger `id` starts at `k`; where to go on.
    fn at(&mut self, k: usize, id: usize) -> usize {
        let b = self.b;
        match TRIGGERS[id] {
            "~~" => self.strike(k),
            "<" => self.tag(k),
            "[^" => self.footnote(k),
            "\\color" | "\\textcolor" => self.color(k, TRIGGERS[id].len()),
            // `\phantom`, `\hphantom`, `\vphantom`; overlays (`\llap`,
            // `\rlap`, `\clap`, `\mathllap`, ...) print over their
            // neighbours: what they hold is no answer.
            t if t.ends_with("phantom") || t.ends_with("lap") => {
                self.command_group(k, k + t.len(), true)
            }
            // `\smash{x}` shows x: only the command goes.
            _ => {
                let mut e = k + 6;
                if b.get(e) == Some(&b'[') {
                    e = close_of(&b[..b.len().min(e + 16)], e, b'[', b']').map_or(e, |c| c + 1);
                }
                self.blank(k, e);
                e
            }
        }
    }

    /// `\cmd{...}` at `s`, its name ending at `name_end`: blank the command
    /// (and its group when `all`). Without a group, only the command goes.
    fn command_group(&mut self, s: usize, name_end: usize, all: bool) -> usize {
        let b = self.b;
        if b.get(name_end).is_some_and(u8::is_ascii_alphabetic) {
            return name_end; // another command (`\phantomx`)
        }
        let g = skip_spaces(b, name_end);
        if b.get(g) != Some(&b'{') {
            self.blank(s, name_end);
            return name_end;
        }
        // An unclosed group hides the rest.
        let end = close_of(b, g, b'{', b'}').map_or(b.len(), |c| c + 1);
        self.blank(s, if all { end } else { g });
        if all {
            end
        } else {
            g
        }
    }

    /// `~~struck~~` (GitHub's rule: the opening is followed, the closing
    /// preceded, by no space, nor by punctuation glued to a word: `x~~=~~5`
    /// is LaTeX spacing); within a paragraph.
    fn strike(&mut self, k: usize) -> usize {
        let b = self.b;
        if !opens(b, k) {
            return k + 2;
        }
        if k >= self.para_end {
            self.para_end = memmem::find(&b[k..], b"\n\n").map_or(b.len(), |j| k + j);
        }
        let para = self.para_end;
        let mut from = k + 2;
        while let Some(j) = memmem::find(&b[from..para], b"~~").map(|j| from + j) {
            if closes(b, j) {
                self.blank(k, j + 2);
                return j + 2;
            }
            from = j + 1;
        }
        // No closer in the paragraph: no later opener in it has one either.
        para
    }

    /// An HTML comment, element or tag at `b[k]` (a `<`).
    fn tag(&mut self, k: usize) -> usize {
        let b = self.b;
        if b[k..].starts_with(b"<!--") {
            let end = memmem::find(&b[k + 4..], b"-->").map_or(b.len(), |j| k + 4 + j + 3);
            self.blank(k, end);
            return end;
        }
        let Some(t) = Tag::read(b, k) else {
            return k + 1;
        };
        if let Some(i) = STRUCK
            .iter()
            .position(|n| t.name.eq_ignore_ascii_case(n.as_bytes()))
        {
            if t.closing || self.no_close[i] {
                return t.end;
            }
            match element_end(b, t.end, t.name) {
                Some(end) => {
                    self.blank(k, end);
                    return end;
                }
                None => {
                    self.no_close[i] = true;
                    return t.end;
                }
            }
        }
        if !DECORATION
            .iter()
            .any(|n| t.name.eq_ignore_ascii_case(n.as_bytes()))
        {
            return t.end;
        }
        if !t.closing && invisible(&b[k..t.end]) {
            // Unclosed: the rest is inside it.
            let end = element_end(b, t.end, t.name).unwrap_or(b.len());
            self.blank(k, end);
            return end;
        }
        self.blank(k, t.end);
        t.end
    }

    /// A footnote: the reference `[^1]` and a definition line `[^1]: ...`
    /// (with its indented continuation lines).
    fn footnote(&mut self, k: usize) -> usize {
        let b = self.b;
        let Some(close) = b[k + 2..]
            .iter()
            .take(40)
            .position(|&c| c == b']')
            .map(|j| k + 2 + j)
        else {
            return k + 2;
        };
        let label = &b[k + 2..close];
        if label.is_empty()
            || !label
                .iter()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_'))
        {
            return k + 2;
        }
        let line_start = k == 0 || b[k - 1] == b'\n';
        if !(line_start && b.get(close + 1) == Some(&b':')) {
            self.blank(k, close + 1);
            return close + 1;
        }
        let mut end = close + 1;
        loop {
            end = memchr::memchr(b'\n', &b[end..]).map_or(b.len(), |j| end + j);
            let next = end + 1;
            let indented = b.get(next).is_some_and(|c| matches!(c, b' ' | b'\t'))
                && b.get(next..).is_some_and(|r| {
                    !r.iter()
                        .take_while(|c| **c != b'\n')
                        .all(u8::is_ascii_whitespace)
                });
            if !indented {
                break;
            }
            end = next;
        }
        self.blank(k, end);
        end
    }

    /// `\color{c}{x}`, `{\color{c} x}`, `\textcolor{c}{x}` (optionally
    /// `[model]`): invisible colours hide what they colour; any other colour
    /// is decoration and only the command goes.
    fn color(&mut self, k: usize, len: usize) -> usize {
        let b = self.b;
        let mut i = k + len;
        if b.get(i).is_some_and(u8::is_ascii_alphabetic) {
            return i; // `\colorbox`, `\colorlet`
        }
        let mut model: &[u8] = b"";
        i = skip_spaces(b, i);
        // A colour's name is short: its brackets close within a few bytes.
        let spec = &b[..b.len().min(i + 80)];
        if b.get(i) == Some(&b'[') {
            let Some(c) = close_of(spec, i, b'[', b']') else {
                return i;
            };
            model = &b[i + 1..c];
            i = skip_spaces(b, c + 1);
        }
        if b.get(i) != Some(&b'{') {
            return i;
        }
        let Some(c) = close_of(&b[..b.len().min(i + 80)], i, b'{', b'}') else {
            return i;
        };
        let hides = is_invisible_colour(model, &b[i + 1..c]);
        let spec_end = c + 1;
        if !hides {
            self.blank(k, spec_end);
            return spec_end;
        }
        let g = skip_spaces(b, spec_end);
        let end = if b.get(g) == Some(&b'{') {
            close_of(b, g, b'{', b'}').map_or(b.len(), |c| c + 1)
        } else {
            // `{\color{white} x}`: to the end of the group it sits in, or of
            // its math span or line.
            group_end(b, spec_end)
        };
        self.blank(k, end);
        end
    }
}

fn skip_spaces(b: &[u8], mut i: usize) -> usize {
    while b.get(i) == Some(&b' ') {
        i += 1;
    }
    i
}

/// The index of the bracket closing the one at `b[open]`, counting nesting.
fn close_of(b: &[u8], open: usize, o: u8, c: u8) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = open;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            x if x == o => depth += 1,
            x if x == c => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The end of the brace group, math span or line that `b[from]` sits in.
fn group_end(b: &[u8], from: usize) -> usize {
    let mut depth = 0usize;
    let mut i = from;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'{' => depth += 1,
            b'}' if depth == 0 => return i,
            b'}' => depth -= 1,
            b'$' | b'\n' if depth == 0 => return i,
            _ => {}
        }
        i += 1;
    }
    b.len()
}

fn is_invisible_colour(model: &[u8], c: &[u8]) -> bool {
    let c: Vec<u8> = c
        .iter()
        .filter(|x| !x.is_ascii_whitespace())
        .map(u8::to_ascii_lowercase)
        .collect();
    let m = model.to_ascii_lowercase();
    match m.as_slice() {
        b"" | b"named" => matches!(
            c.as_slice(),
            b"white" | b"transparent" | b"#fff" | b"#ffffff"
        ),
        b"html" => matches!(c.as_slice(), b"ffffff" | b"fff"),
        b"rgb" => matches!(c.as_slice(), b"1,1,1"),
        b"rgb255" | b"rgb256" => matches!(c.as_slice(), b"255,255,255"),
        b"gray" => c.as_slice() == b"1",
        _ => false,
    }
}

/// Whether markdown strikethrough opens at `b[k]` (`~~`).
fn opens(b: &[u8], k: usize) -> bool {
    let Some(&next) = b.get(k + 2) else {
        return false;
    };
    if next.is_ascii_whitespace() || next == b'~' {
        return false;
    }
    if next.is_ascii_punctuation() {
        return k == 0 || b[k - 1].is_ascii_whitespace() || b[k - 1].is_ascii_punctuation();
    }
    true
}

/// Whether markdown strikethrough closes at `b[j]` (`~~`).
fn closes(b: &[u8], j: usize) -> bool {
    let prev = b[j - 1];
    if prev.is_ascii_whitespace() || prev == b'~' {
        return false;
    }
    if prev.is_ascii_punctuation() {
        return b
            .get(j + 2)
            .is_none_or(|c| c.is_ascii_whitespace() || c.is_ascii_punctuation());
    }
    true
}

/// An HTML tag: `<name attrs>` or `</name>` on one line.
struct Tag<'t> {
    name: &'t [u8],
    closing: bool,
    end: usize,
}

impl<'t> Tag<'t> {
    fn read(b: &'t [u8], k: usize) -> Option<Tag<'t>> {
        let mut i = k + 1;
        let closing = b.get(i) == Some(&b'/');
        if closing {
            i += 1;
        }
        let s = i;
        while b.get(i).is_some_and(u8::is_ascii_alphanumeric) {
            i += 1;
        }
        if i == s || !b[s].is_ascii_alphabetic() {
            return None;
        }
        let name = &b[s..i];
        match b.get(i) {
            Some(b'>') => {}
            Some(b' ' | b'/') if !closing => {}
            _ => return None,
        }
        let end = b[i..]
            .iter()
            .take(400)
            .position(|&c| matches!(c, b'>' | b'<' | b'\n'))
            .map(|j| i + j)
            .filter(|&j| b[j] == b'>')?;
        Some(Tag {
            name,
            closing,
            end: end + 1,
        })
    }
}

/// The end of the element named `name` whose content starts at `from`
/// (nesting counted), or `None` when it never closes.
fn element_end(b: &[u8], from: usize, name: &[u8]) -> Option<usize> {
    let mut depth = 1usize;
    let mut i = from;
    while let Some(j) = memchr::memchr(b'<', &b[i..]).map(|j| i + j) {
        match Tag::read(b, j) {
            Some(t) if t.name.eq_ignore_ascii_case(name) => {
                if t.closing {
                    depth -= 1;
                    if depth == 0 {
                        return Some(t.end);
                    }
                } else {
                    depth += 1;
                }
                i = t.end;
            }
            _ => i = j + 1,
        }
    }
    None
}

/// Whether a start tag makes its element invisible: `hidden`,
/// `display:none`, `visibility:hidden`, `font-size:0`, `opacity:0`, a white
/// or transparent colour (`color:white`, `<font color="#fff">`).
fn invisible(tag: &[u8]) -> bool {
    let t: Vec<u8> = tag
        .iter()
        .filter(|c| !matches!(c, b' ' | b'"' | b'\''))
        .map(u8::to_ascii_lowercase)
        .collect();
    let has = |p: &[u8]| memmem::find(&t, p).is_some();
    // `hidden` as an attribute (`<span hidden>`, `hidden=...`), or a value.
    let words = tag
        .split(|c| matches!(c, b' ' | b'>' | b'/' | b'='))
        .any(|w| w.eq_ignore_ascii_case(b"hidden"));
    words
        || has(b"display:none")
        || has(b"visibility:hidden")
        || has(b"visibility:collapse")
        || zero_after(&t, b"font-size:")
        || zero_after(&t, b"opacity:")
        || [&b"color:"[..], b"color="].iter().any(|p| {
            let mut from = 0;
            while let Some(j) = memmem::find(&t[from..], p).map(|j| from + j) {
                // `background-color` paints behind the text.
                let bg = t[..j].ends_with(b"background-");
                let v = &t[j + p.len()..];
                let white = [
                    &b"white"[..],
                    b"transparent",
                    b"#fff",
                    b"#ffffff",
                    b"rgba(0,0,0,0)",
                ]
                .iter()
                .any(|w| {
                    v.starts_with(w) && !v.get(w.len()).is_some_and(|c| c.is_ascii_alphanumeric())
                }) || v.starts_with(b"rgb(255,255,255)");
                if white && !bg {
                    return true;
                }
                from = j + p.len();
            }
            false
        })
}

/// Whether `key` is followed by a zero size (`font-size:0`, `0px`, `0.0em`).
fn zero_after(t: &[u8], key: &[u8]) -> bool {
    let mut from = 0;
    while let Some(j) = memmem::find(&t[from..], key).map(|j| from + j) {
        let v = &t[j + key.len()..];
        let n = v.iter().take_while(|c| matches!(c, b'0' | b'.')).count();
        if n > 0 && !v.get(n).is_some_and(u8::is_ascii_digit) {
            return true;
        }
        from = j + key.len();
    }
    false
}
