//! The layer order of `docs/architecture.md` ("## Layers"), checked on the sources: every path
//! that starts with `crate::`, `super::` or `self::` in the code of `crates/shale/src` (outside
//! comments and strings, test modules included) names a module, and that module must be in the
//! importing module's layer or a lower one. The order is parsed from the document, so the two
//! cannot drift apart. See the document for what counts as an import.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Layer ranks: of the top-level modules (`crate` is the root, `lib.rs`), and of some children
/// of a module (`db::flush`), which are checked only against each other.
#[derive(Debug, Default)]
struct Layers {
    top: BTreeMap<String, usize>,
    sub: BTreeMap<String, BTreeMap<String, usize>>,
}

/// Parse the numbered lists of the "## Layers" section: `N. `a` `b` — text`: the backticked names
/// before ` — ` are one layer of rank N.
fn parse_layers(doc: &str) -> Layers {
    let mut layers = Layers::default();
    let mut in_section = false;
    for line in doc.lines() {
        if line.starts_with("## ") {
            in_section = line.trim() == "## Layers";
            continue;
        }
        if !in_section {
            continue;
        }
        let Some((num, rest)) = line.split_once(". ") else {
            continue;
        };
        let Ok(rank) = num.trim().parse::<usize>() else {
            continue;
        };
        let names = rest.split(" — ").next().unwrap_or("");
        for name in names.split('`').skip(1).step_by(2) {
            match name.split_once("::") {
                Some((parent, child)) => {
                    let prev = layers
                        .sub
                        .entry(parent.to_string())
                        .or_default()
                        .insert(child.to_string(), rank);
                    assert!(prev.is_none(), "{name} is listed twice in the layers");
                }
                None => {
                    let prev = layers.top.insert(name.to_string(), rank);
                    assert!(prev.is_none(), "{name} is listed twice in the layers");
                }
            }
        }
    }
    layers
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Punct(char),
    /// `::`
    Path,
}

/// Tokens of Rust source with their line numbers; comments, strings and char literals dropped.
fn tokenize(src: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    // Skip a (raw, if `hashes` is Some) string starting at the opening quote `c[i]`.
    let skip_string = |mut i: usize, hashes: Option<usize>, line: &mut usize| -> usize {
        i += 1;
        while i < c.len() {
            match (c[i], hashes) {
                ('\n', _) => *line += 1,
                ('\\', None) => {
                    if c.get(i + 1) == Some(&'\n') {
                        *line += 1;
                    }
                    i += 1;
                }
                ('"', None) => return i + 1,
                ('"', Some(n)) if (1..=n).all(|k| c.get(i + k) == Some(&'#')) => return i + 1 + n,
                _ => {}
            }
            i += 1;
        }
        i
    };
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && c.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if c[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if ch == '"' {
            i = skip_string(i, None, &mut line);
        } else if ch == '\'' {
            // A char literal ('a', '\n', '\u{1F600}') or a lifetime ('a).
            if c.get(i + 1) == Some(&'\\') {
                i += 2;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if c.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
            }
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            let raw = matches!(word.as_str(), "r" | "br" | "cr");
            if raw && matches!(c.get(i), Some('"') | Some('#')) {
                let mut n = 0;
                while c.get(i + n) == Some(&'#') {
                    n += 1;
                }
                if c.get(i + n) == Some(&'"') {
                    i = skip_string(i + n, Some(n), &mut line);
                    continue;
                }
            }
            if matches!(word.as_str(), "b" | "c") && c.get(i) == Some(&'"') {
                i = skip_string(i, None, &mut line);
                continue;
            }
            if word == "b" && c.get(i) == Some(&'\'') {
                i += if c.get(i + 1) == Some(&'\\') { 1 } else { 0 };
                i += 1;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
                continue;
            }
            out.push((Tok::Ident(word), line));
        } else if ch == ':' && c.get(i + 1) == Some(&':') {
            out.push((Tok::Path, line));
            i += 2;
        } else if ch.is_whitespace() {
            i += 1;
        } else {
            out.push((Tok::Punct(ch), line));
            i += 1;
        }
    }
    out
}

/// The paths of a `use` tree or inline path starting at `toks[i]` (after a leading `crate`,
/// `super` or `self` has been resolved into `prefix`): every path it names, as segments.
fn paths_from(toks: &[(Tok, usize)], mut i: usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    let mut path = prefix;
    loop {
        if toks.get(i).map(|t| &t.0) != Some(&Tok::Path) {
            out.push(path);
            return i;
        }
        i += 1;
        match toks.get(i).map(|t| &t.0) {
            Some(Tok::Ident(w)) if w == "super" => {
                path.pop();
                i += 1;
            }
            Some(Tok::Ident(w)) if w == "self" => i += 1,
            Some(Tok::Ident(w)) => {
                path.push(w.clone());
                i += 1;
            }
            Some(Tok::Punct('{')) => {
                i += 1;
                loop {
                    match toks.get(i).map(|t| &t.0) {
                        Some(Tok::Punct('}')) | None => return i + 1,
                        Some(Tok::Punct(',')) | Some(Tok::Punct('*')) => i += 1,
                        Some(Tok::Ident(w)) if w == "self" => {
                            out.push(path.clone());
                            i += 1;
                        }
                        Some(Tok::Ident(w)) if w == "as" => i += 2,
                        Some(Tok::Ident(w)) => {
                            let mut p = path.clone();
                            p.push(w.clone());
                            i = paths_from(toks, i + 1, p, out);
                        }
                        Some(_) => i += 1,
                    }
                }
            }
            _ => {
                // `*` or something that ends the path.
                out.push(path);
                return i;
            }
        }
    }
}

/// Every module path named in `src`, with its line and the module the naming code is in
/// (`module` of the file, plus the inline `mod x { .. }` it stands in).
fn imports(src: &str, module: &[String]) -> Vec<(usize, Vec<String>, Vec<String>)> {
    let toks = tokenize(src);
    let mut out = Vec::new();
    // Inline modules: (name, brace depth inside them).
    let mut inline: Vec<(String, usize)> = Vec::new();
    // Child modules declared with `mod name;`: (declaring module, name).
    let mut children: Vec<(Vec<String>, String)> = Vec::new();
    let mut depth = 0;
    let mut i = 0;
    while i < toks.len() {
        let prev_is_path = i > 0 && toks[i - 1].0 == Tok::Path;
        let next_is_path = toks.get(i + 1).map(|t| &t.0) == Some(&Tok::Path);
        let mut here: Vec<String> = module.to_vec();
        here.extend(inline.iter().map(|(n, _)| n.clone()));
        match &toks[i].0 {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                if inline.last().map(|m| m.1) == Some(depth) {
                    inline.pop();
                }
                depth -= 1;
            }
            Tok::Ident(w) if w == "mod" => match (toks.get(i + 1), toks.get(i + 2)) {
                (Some((Tok::Ident(name), _)), Some((Tok::Punct('{'), _))) => inline.push((name.clone(), depth + 1)),
                (Some((Tok::Ident(name), _)), Some((Tok::Punct(';'), _))) => {
                    children.push((here.clone(), name.clone()))
                }
                _ => {}
            },
            // A path that starts with a child module declared above (`mod flush;` ...
            // `pub use flush::X`) is an import of that child.
            Tok::Ident(w) if !prev_is_path && next_is_path && children.iter().any(|(m, c)| *m == here && c == w) => {
                let mut prefix = here.clone();
                prefix.push(w.clone());
                let mut paths = Vec::new();
                let line = toks[i].1;
                let next = paths_from(&toks, i + 1, prefix, &mut paths);
                out.extend(paths.into_iter().map(|p| (line, here.clone(), p)));
                i = next;
                continue;
            }
            Tok::Ident(w) if !prev_is_path && next_is_path && matches!(w.as_str(), "crate" | "super" | "self") => {
                let prefix = match w.as_str() {
                    "crate" => Vec::new(),
                    "super" => here[..here.len().saturating_sub(1)].to_vec(),
                    _ => here.clone(),
                };
                let mut paths = Vec::new();
                let line = toks[i].1;
                let next = paths_from(&toks, i + 1, prefix, &mut paths);
                out.extend(paths.into_iter().map(|p| (line, here.clone(), p)));
                // Braces of a `use` group were consumed; keep the depth count right.
                i = next;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// The layer of a module path: (top-level module or `crate`, child ranked under it).
fn layer_of<'a>(layers: &Layers, path: &'a [String], modules: &[String]) -> (&'a str, Option<&'a str>) {
    match path.first() {
        Some(top) if modules.contains(top) => {
            let child = path
                .get(1)
                .map(|s| s.as_str())
                .filter(|c| layers.sub.get(top).is_some_and(|s| s.contains_key(*c)));
            (top.as_str(), child)
        }
        // An item of the root (`crate::DB`, a re-export) or the root itself.
        _ => ("crate", None),
    }
}

/// Upward imports in `files` (path, module, source); `modules` are the top-level modules.
fn check(layers: &Layers, modules: &[String], files: &[(String, Vec<String>, String)]) -> Vec<String> {
    let mut bad = Vec::new();
    for m in modules.iter().map(|s| s.as_str()).chain(["crate"]) {
        if !layers.top.contains_key(m) {
            bad.push(format!(
                "module `{m}` is in no layer of the Layers section of docs/architecture.md"
            ));
        }
    }
    let rank = |name: &str| layers.top.get(name).copied().unwrap_or(usize::MAX);
    for (file, module, src) in files {
        for (line, from, to) in imports(src, module) {
            let (ft, fc) = layer_of(layers, &from, modules);
            let (tt, tc) = layer_of(layers, &to, modules);
            let what = format!("{file}:{line}: `{}` imports `{}`", from.join("::"), to.join("::"));
            if ft != tt {
                if rank(tt) > rank(ft) {
                    bad.push(format!(
                        "{what}: layer {} (`{tt}`) is above layer {} (`{ft}`)",
                        rank(tt),
                        rank(ft)
                    ));
                }
            } else if let (Some(fc), Some(tc)) = (fc, tc) {
                let sub = &layers.sub[ft];
                if sub[tc] > sub[fc] {
                    bad.push(format!(
                        "{what}: `{ft}::{tc}` is above `{ft}::{fc}` in the layers of `{ft}`"
                    ));
                }
            }
        }
    }
    bad
}

/// The file-level import graph of `files`: for each file (by index), the files its imports
/// name. A path names the file of its longest prefix that is a module of `files`; a file's
/// imports of itself are not edges.
fn file_graph(files: &[(String, Vec<String>, String)]) -> Vec<std::collections::BTreeSet<usize>> {
    let by_module: BTreeMap<&[String], usize> = files.iter().enumerate().map(|(i, f)| (&f.1[..], i)).collect();
    let mut graph = vec![std::collections::BTreeSet::new(); files.len()];
    for (i, (_, module, src)) in files.iter().enumerate() {
        for (_, _, to) in imports(src, module) {
            let target = (0..=to.len()).rev().find_map(|n| by_module.get(&to[..n]).copied());
            if let Some(t) = target.filter(|&t| t != i) {
                graph[i].insert(t);
            }
        }
    }
    graph
}

/// The import circles of a graph: its strongly connected components of more than one file,
/// each as a sorted list of file indices (Tarjan's algorithm, iterative).
fn circles(graph: &[std::collections::BTreeSet<usize>]) -> Vec<Vec<usize>> {
    let n = graph.len();
    let (mut index, mut low, mut on_stack) = (vec![usize::MAX; n], vec![0; n], vec![false; n]);
    let (mut stack, mut out, mut next) = (Vec::new(), Vec::new(), 0);
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        // (node, its successors still to visit)
        let mut work: Vec<(usize, Vec<usize>)> = vec![(root, graph[root].iter().rev().copied().collect())];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some((v, succ)) = work.last_mut() {
            let v = *v;
            if let Some(w) = succ.pop() {
                if index[w] == usize::MAX {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    work.push((w, graph[w].iter().rev().copied().collect()));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some((parent, _)) = work.last() {
                low[*parent] = low[*parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut comp = Vec::new();
                loop {
                    let w = stack.pop().unwrap();
                    on_stack[w] = false;
                    comp.push(w);
                    if w == v {
                        break;
                    }
                }
                if comp.len() > 1 {
                    comp.sort();
                    out.push(comp);
                }
            }
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module a source file is (`engine/mod.rs` -> `engine`, `engine/flush.rs` -> `engine::flush`, `lib.rs` ->
/// the root).
fn module_of(rel: &Path) -> Vec<String> {
    let mut segs: Vec<String> = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
    let last = segs.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        segs.push(stem.to_string());
    }
    segs
}

/// Every source file of the crate: (path from the crate root, module, text).
fn source_files() -> Vec<(String, Vec<String>, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    paths.sort();
    paths
        .iter()
        .map(|p| {
            let rel = p.strip_prefix(&src).unwrap();
            (
                format!("src/{}", rel.display()),
                module_of(rel),
                std::fs::read_to_string(p).unwrap(),
            )
        })
        .collect()
}

#[test]
fn no_file_imports_a_file_that_imports_it_back() {
    let files = source_files();
    let graph = file_graph(&files);
    let found = circles(&graph);
    let mut report = Vec::new();
    for comp in &found {
        report.push(format!("a circle of {} files:", comp.len()));
        for &f in comp.iter() {
            let inside: Vec<&str> = graph[f]
                .iter()
                .filter(|t| comp.contains(t))
                .map(|&t| files[t].0.as_str())
                .collect();
            report.push(format!("  {} -> {}", files[f].0, inside.join(", ")));
        }
    }
    assert!(
        found.is_empty(),
        "import circles in crates/shale/src:\n{}",
        report.join("\n")
    );
}

#[test]
fn imports_follow_the_layers_of_architecture_md() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("../../docs/architecture.md")).unwrap();
    let layers = parse_layers(&doc);
    assert!(
        layers.top.len() > 10 && layers.sub.contains_key("engine"),
        "no Layers section parsed: {layers:?}"
    );
    let files = source_files();
    let mut modules: Vec<String> = files.iter().filter_map(|f| f.1.first().cloned()).collect();
    modules.sort();
    modules.dedup();
    for (parent, children) in &layers.sub {
        for child in children.keys() {
            let known = files
                .iter()
                .any(|f| f.1.len() >= 2 && f.1[0] == *parent && f.1[1] == *child);
            assert!(known, "`{parent}::{child}` of the layers is no module file");
        }
    }
    let bad = check(&layers, &modules, &files);
    assert!(
        bad.is_empty(),
        "imports against the layer order of docs/architecture.md:\n{}",
        bad.join("\n")
    );
}

/// A made-up source file for the checkers' own tests.
fn file(name: &str, module: &[&str], src: &str) -> (String, Vec<String>, String) {
    (
        name.to_string(),
        module.iter().map(|s| s.to_string()).collect(),
        src.to_string(),
    )
}

/// The checker itself: what it must see and what it must not.
#[test]
fn the_checker_sees_upward_imports() {
    let layers = parse_layers(
        "## Layers\n\n1. `low` — text with `other`\n2. `high`\n3. `crate`\n\n1. `high::a`\n2. `high::b`\n\n## Next\n4. `x`\n",
    );
    assert_eq!(layers.top.len(), 3);
    assert_eq!(layers.sub["high"].len(), 2);
    let modules = vec!["low".to_string(), "high".to_string()];
    let ok = [
        file("high.rs", &["high"], "use crate::low::X;\nfn f() { crate::low::g(); }"),
        file("low.rs", &["low"], "// use crate::high::X;\n/* crate::high */ const S: &str = \"crate::high::x\";\nconst R: &str = r#\"crate::high\"#;\nfn f<'a>(c: char) -> bool { c == '{' }\n"),
        file("high/b.rs", &["high", "b"], "use super::a::X;\nuse super::{a, DbInner};\nuse crate::{low, high::a::Y};"),
        file("low.rs", &["low"], "pub(crate) fn f() {}\npub(super) struct S;\n#[cfg(test)]\nmod tests { use super::*; use super::f; }"),
        file("lib.rs", &[], "use crate::high::X;\nuse crate::low::Y;"),
    ];
    assert_eq!(check(&layers, &modules, &ok), Vec::<String>::new());
    let bad = [
        file("low.rs", &["low"], "use crate::high::X;"),
        file("low.rs", &["low"], "use crate::{low::A, high::{b::X, Y}};"),
        file("low.rs", &["low"], "fn f() { let x = crate::high::g(); }"),
        file("low.rs", &["low"], "use crate::Exported;"),
        file("low.rs", &["low"], "mod inner { use super::super::high::X; }"),
        file("high/a.rs", &["high", "a"], "use super::b::X;"),
        file("high/a.rs", &["high", "a"], "fn f() { super::b::g() }"),
        file("high/a.rs", &["high", "a"], "use crate::high::{b::X};"),
    ];
    for f in &bad {
        assert!(!check(&layers, &modules, std::slice::from_ref(f)).is_empty(), "{}", f.2);
    }
    // An unlisted module is an error too.
    let more = vec!["low".to_string(), "high".to_string(), "new".to_string()];
    assert_eq!(check(&layers, &more, &[]).len(), 1);
}

/// The circle finder: a circle through three files, and one through a parent's `mod.rs` and its
/// children, are found; a one-way chain is not.
#[test]
fn the_circle_finder_sees_circles() {
    let chain = [
        file("a/mod.rs", &["a"], "mod b;\nmod c;\npub(crate) use b::X;"),
        file("a/b.rs", &["a", "b"], "use super::c::Y;"),
        file("a/c.rs", &["a", "c"], "use crate::d::Z;"),
        file("d.rs", &["d"], ""),
    ];
    assert!(circles(&file_graph(&chain)).is_empty());
    let mut circle = chain.clone();
    circle[3] = file("d.rs", &["d"], "fn f() { crate::a::b::g() }");
    assert_eq!(circles(&file_graph(&circle)), vec![vec![1, 2, 3]]);
    let mut to_parent = chain.clone();
    to_parent[2] = file("a/c.rs", &["a", "c"], "use super::X;");
    assert_eq!(circles(&file_graph(&to_parent)), vec![vec![0, 1, 2]]);
}

/// The names the `rocksdb` crate (0.25) has at its root, besides its modules: a program that
/// switches by renaming the dependency finds each name it imports from the root at the root.
const ROCKSDB_ROOT_NAMES: &str = "
    AsColumnFamilyRef BoundColumnFamily ColumnFamily ColumnFamilyDescriptor ColumnFamilyRef
    ColumnFamilyTtl DEFAULT_COLUMN_FAMILY_NAME CompactionDecision DBAccess DBCommon
    DBWithThreadMode LiveFile MultiThreaded Range SingleThreaded ThreadMode DB DBIterator
    DBIteratorWithThreadMode DBRawIterator DBRawIteratorWithThreadMode DBWALIterator Direction
    IteratorMode BlockBasedIndexType BlockBasedOptions BlockBasedTablePinningTier
    BottommostLevelCompaction Cache ChecksumType CompactOptions CompactionPri CuckooTableOptions
    DBCompactionStyle DBCompressionType DBPath DBRecoveryMode DataBlockIndexType
    FifoCompactOptions FlushOptions InfoLogger IngestExternalFileOptions KeyEncodingType LogLevel
    LruCacheOptions MemtableFactory Options PlainTableFactoryOptions ReadOptions ReadTier
    UniversalCompactOptions UniversalCompactionStopStyle WaitForCompactOptions
    WriteBufferManager WriteOptions DBPinnableSlice Env CStrLike IterateBounds PrefixRange
    MergeOperands PerfContext PerfMetric PerfStatsLevel SliceTransform Snapshot
    SnapshotWithThreadMode SstFileWriter OptimisticTransactionDB OptimisticTransactionOptions
    Transaction TransactionDB TransactionDBOptions TransactionOptions WriteBatch
    WriteBatchIterator WriteBatchIteratorCf WriteBatchWithTransaction Error ErrorKind";

/// What a crate root (`lib.rs`) makes public: (modules, other names). Inline module bodies are
/// skipped; `pub use` paths give the name they end in (or their `as` name), groups included.
fn root_names(src: &str) -> (Vec<String>, Vec<String>) {
    let toks: Vec<Tok> = tokenize(src).into_iter().map(|(t, _)| t).collect();
    let word = |i: usize, w: &str| matches!(toks.get(i), Some(Tok::Ident(s)) if s == w);
    let punct = |i: usize, c: char| matches!(toks.get(i), Some(Tok::Punct(p)) if *p == c);
    let (mut modules, mut names) = (Vec::new(), Vec::new());
    let mut depth = 0usize;
    let mut i = 0;
    while i < toks.len() {
        if punct(i, '{') {
            depth += 1;
        } else if punct(i, '}') {
            depth = depth.saturating_sub(1);
        } else if depth == 0 && word(i, "pub") && !punct(i + 1, '(') {
            if word(i + 1, "mod") {
                if let Some(Tok::Ident(m)) = toks.get(i + 2) {
                    modules.push(m.clone());
                }
            } else if word(i + 1, "use") {
                // Up to the `;`: an identifier not followed by `::` ends a path; `as` renames it.
                let mut j = i + 2;
                while j < toks.len() && !punct(j, ';') {
                    if let Tok::Ident(s) = &toks[j] {
                        let path_goes_on = matches!(toks.get(j + 1), Some(Tok::Path));
                        let renamed = word(j + 1, "as");
                        if s != "as" && !path_goes_on && !renamed && s != "self" {
                            names.push(s.clone());
                        }
                    }
                    j += 1;
                }
                i = j;
            } else if let Some(Tok::Ident(kind)) = toks.get(i + 1) {
                if ["fn", "struct", "enum", "trait", "type", "const", "static"].contains(&kind.as_str()) {
                    if let Some(Tok::Ident(n)) = toks.get(i + 2) {
                        names.push(n.clone());
                    }
                }
            }
        }
        i += 1;
    }
    (modules, names)
}

#[test]
fn the_crate_root_holds_only_names_the_rocksdb_crate_has_there() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    let (modules, names) = root_names(&src);
    assert!(
        names.len() > 40 && names.iter().any(|n| n == "DB") && modules.iter().any(|m| m == "fs"),
        "lib.rs not parsed: {names:?} {modules:?}"
    );
    let allowed: Vec<&str> = ROCKSDB_ROOT_NAMES.split_whitespace().collect();
    let extra: Vec<&String> = names.iter().filter(|n| !allowed.contains(&n.as_str())).collect();
    assert!(
        extra.is_empty(),
        "names at the crate root that the `rocksdb` crate does not have there (put them in a module): {extra:?}"
    );
}

#[test]
fn the_root_name_reader_sees_each_kind_of_export() {
    let src = "mod inner;\npub mod fs;\npub mod checkpoint {\n    pub use crate::api::Checkpoint;\n}\n\
               pub use api::{DB, Range as KeyRange};\npub use a::b::{c::Deep, Flat};\npub use x::Single;\n\
               pub(crate) use y::Hidden;\npub fn helper() {}\npub type Result<T> = std::result::Result<T, Error>;\n";
    let (modules, names) = root_names(src);
    assert_eq!(modules, ["fs", "checkpoint"]);
    assert_eq!(names, ["DB", "KeyRange", "Deep", "Flat", "Single", "helper", "Result"]);
}

/// Functions of more than `max` lines (first line of `fn` to its closing brace), skipping
/// `#[test]` functions: (name, first line, lines).
fn long_functions(src: &str, max: usize) -> Vec<(String, usize, usize)> {
    let toks = tokenize(src);
    let mut out = Vec::new();
    for i in 0..toks.len() {
        let (Tok::Ident(kw), start) = &toks[i] else { continue };
        let Some((Tok::Ident(name), _)) = toks.get(i + 1) else {
            continue;
        };
        if kw != "fn" {
            continue;
        }
        // `#[test]` just before the `fn` (possibly after `pub`/`async`).
        let back: Vec<&Tok> = toks[i.saturating_sub(6)..i].iter().map(|t| &t.0).collect();
        let is_test = back
            .windows(4)
            .any(|w| matches!(w, [Tok::Punct('#'), Tok::Punct('['), Tok::Ident(t), Tok::Punct(']')] if t == "test"));
        // The body: the first `{` before any `;` at depth 0 (a declaration has none).
        let mut j = i + 2;
        while j < toks.len() && !matches!(toks[j].0, Tok::Punct('{') | Tok::Punct(';')) {
            j += 1;
        }
        if is_test || !matches!(toks.get(j), Some((Tok::Punct('{'), _))) {
            continue;
        }
        let mut depth = 0usize;
        for (t, line) in &toks[j..] {
            match t {
                Tok::Punct('{') => depth += 1,
                Tok::Punct('}') => {
                    depth -= 1;
                    if depth == 0 {
                        if line - start + 1 > max {
                            out.push((name.clone(), *start, line - start + 1));
                        }
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    out
}

#[test]
fn no_function_runs_over_150_lines() {
    let mut long = Vec::new();
    for (file, _, src) in source_files() {
        for (name, line, n) in long_functions(&src, 150) {
            long.push(format!("{file}:{line}: `{name}` has {n} lines"));
        }
    }
    assert!(
        long.is_empty(),
        "functions to split where the split has a name:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_function_length_reader_counts_bodies_and_skips_tests() {
    let body = "    x();\n".repeat(5);
    let src = format!(
        "fn short() {{\n{body}}}\nfn decl();\n#[test]\nfn a_test() {{\n{body}}}\npub(crate) fn long(a: u8) -> u8 {{\n    if a > 0 {{ 1 }} else {{ 2 }};\n{body}    a\n}}\n"
    );
    assert_eq!(long_functions(&src, 7), vec![("long".to_string(), 17, 9)]);
}

/// Every Rust file under `crates/` (sources, tests, examples, benches).
fn workspace_rust_files() -> Vec<PathBuf> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut paths = Vec::new();
    rust_files(&crates, &mut paths);
    paths.retain(|p| !p.components().any(|c| c.as_os_str() == "target"));
    paths
}

#[test]
fn no_module_is_included_by_path_attribute() {
    let files = workspace_rust_files();
    assert!(files.len() > 100, "no sources found");
    let with_path: Vec<String> = files
        .iter()
        .filter(|p| {
            let toks: Vec<Tok> = tokenize(&std::fs::read_to_string(p).unwrap())
                .into_iter()
                .map(|t| t.0)
                .collect();
            toks.windows(3)
                .any(|w| matches!(w, [Tok::Punct('#'), Tok::Punct('['), Tok::Ident(a)] if a == "path"))
        })
        .map(|p| p.display().to_string())
        .collect();
    assert!(with_path.is_empty(), "`#[path]` in: {with_path:?}");
}
