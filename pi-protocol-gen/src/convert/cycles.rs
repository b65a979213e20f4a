//! The conversion's checks and rewrites of the graph of named types: chains of required
//! containment are bounded, and references on cycles of direct containment are boxed (pass 5).

use super::*;

impl<'a> Converter<'_, 'a> {
    /// Refuses a type that holds itself with no object or array in between (through newtypes,
    /// nullable values and union members: no value of it could be decoded), and chains of more
    /// than [`MAX_CHAIN`] types held so, which decoders would recurse through without reading
    /// anything. Walks the types without recursion; the chains found here bound every recursion
    /// through named types that follows (classification, the emitter's accessors, the
    /// interpreter).
    pub(super) fn check_chains(&self) -> Result<()> {
        let edges: Vec<Vec<usize>> = self
            .types
            .iter()
            .map(|t| {
                let mut out = Vec::new();
                match &t.kind {
                    Some(PendingKind::Newtype(shape)) => self.direct(shape, &mut out),
                    Some(PendingKind::Union(members, _)) => members.iter().for_each(|m| {
                        if let VariantKind::Value(shape) = &m.kind {
                            self.direct(shape, &mut out);
                        }
                    }),
                    _ => {}
                }
                out
            })
            .collect();
        // The number of types of the longest chain from each type, once known; `0` while the
        // type is on the path being walked.
        let mut longest: Vec<Option<usize>> = vec![None; edges.len()];
        for start in 0..edges.len() {
            if longest[start].is_some() {
                continue;
            }
            let mut path = vec![(start, 0usize)];
            longest[start] = Some(0);
            while let Some(&mut (node, ref mut next)) = path.last_mut() {
                if let Some(&target) = edges[node].get(*next) {
                    *next += 1;
                    match longest[target] {
                        None => {
                            longest[target] = Some(0);
                            path.push((target, 0));
                        }
                        Some(0) => {
                            let what = match self.types[target].kind {
                                Some(PendingKind::Union(..)) => "union",
                                _ => "type",
                            };
                            return Err(GenError::schema(
                                self.types[target].node.path(),
                                format!("the {what} contains itself"),
                            ));
                        }
                        Some(_) => {}
                    }
                } else {
                    let below = edges[node].iter().filter_map(|&t| longest[t]).max().unwrap_or(0);
                    longest[node] = Some(below + 1);
                    path.pop();
                }
            }
        }
        match longest.iter().position(|l| l.is_some_and(|l| l > MAX_CHAIN)) {
            Some(index) => Err(GenError::schema(
                self.types[index].node.path(),
                format!(
                    "a chain of more than {MAX_CHAIN} types starts here, each holding the next with no object or \
                     array in between (decoders recurse through it without reading anything)"
                ),
            )),
            None => Ok(()),
        }
    }

    /// Boxes every reference that lies on a cycle of direct containment (pass 5).
    pub(super) fn box_cycles(&mut self) {
        let edges: Vec<Vec<usize>> = (0..self.types.len())
            .map(|i| {
                let mut out = Vec::new();
                match &self.types[i].kind {
                    Some(PendingKind::Struct(s)) => s.fields().for_each(|f| self.direct(&f.shape, &mut out)),
                    Some(PendingKind::Newtype(shape)) => self.direct(shape, &mut out),
                    Some(PendingKind::Union(_, Some(u))) => u.variants.iter().for_each(|v| {
                        if let VariantKind::Value(shape) = &v.kind {
                            self.direct(shape, &mut out);
                        }
                    }),
                    _ => {}
                }
                out
            })
            .collect();
        let component = strongly_connected(&edges);
        for i in 0..self.types.len() {
            let on_cycle = |target: usize| component[target] == component[i] && (i != target || edges[i].contains(&i));
            let cyclic: HashSet<String> =
                edges[i].iter().filter(|&&t| on_cycle(t)).map(|&t| self.types[t].rust_name.clone()).collect();
            if cyclic.is_empty() {
                continue;
            }
            match &mut self.types[i].kind {
                Some(PendingKind::Struct(s)) => {
                    for member in &mut s.members {
                        if let Member::Field(f) = member {
                            box_direct(&mut f.shape, &cyclic);
                        }
                    }
                }
                Some(PendingKind::Newtype(shape)) => box_direct(shape, &cyclic),
                Some(PendingKind::Union(_, Some(u))) => {
                    for v in &mut u.variants {
                        if let VariantKind::Value(shape) = &mut v.kind {
                            box_direct(shape, &cyclic);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// The named types `shape` holds directly (not behind an array or a record).
    pub(super) fn direct(&self, shape: &Shape, out: &mut Vec<usize>) {
        match &shape.ty {
            TypeExpr::Named { name, .. } => out.push(self.index_of(name)),
            TypeExpr::Nullable(inner) => self.direct(inner, out),
            _ => {}
        }
    }
}

/// Whether a value of `shape` has constraints to check: its own, or those of what it holds in
/// place (a nullable value, array elements, record keys and values; not a named type's).
pub(super) fn has_checks(shape: &Shape) -> bool {
    !shape.checks.is_empty()
        || match &shape.ty {
            TypeExpr::Nullable(inner) | TypeExpr::Array(inner) => has_checks(inner),
            TypeExpr::Record(record) => !record.keys.is_empty() || has_checks(&record.values),
            _ => false,
        }
}

/// Marks the references of `shape` to the types in `cyclic` as boxed.
pub(super) fn box_direct(shape: &mut Shape, cyclic: &HashSet<String>) {
    match &mut shape.ty {
        TypeExpr::Named { name, boxed } if cyclic.contains(name.as_str()) => *boxed = true,
        TypeExpr::Nullable(inner) => box_direct(inner, cyclic),
        _ => {}
    }
}

/// Tarjan's algorithm: the strongly connected component of every node. Iterative: a chain of
/// types as long as the schema allows costs no stack.
pub(super) fn strongly_connected(edges: &[Vec<usize>]) -> Vec<usize> {
    let n = edges.len();
    let mut index: Vec<Option<usize>> = vec![None; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut component = vec![0; n];
    let (mut next, mut components) = (0, 0);
    for root in 0..n {
        if index[root].is_some() {
            continue;
        }
        // The depth-first path: each node with the position of its next edge.
        let mut path = vec![(root, 0usize)];
        index[root] = Some(next);
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut edge)) = path.last_mut() {
            if let Some(&w) = edges[v].get(*edge) {
                *edge += 1;
                match index[w] {
                    None => {
                        index[w] = Some(next);
                        low[w] = next;
                        next += 1;
                        stack.push(w);
                        on_stack[w] = true;
                        path.push((w, 0));
                    }
                    Some(iw) if on_stack[w] => low[v] = low[v].min(iw),
                    Some(_) => {}
                }
                continue;
            }
            path.pop();
            if let Some(&(parent, _)) = path.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if Some(low[v]) == index[v] {
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component[w] = components;
                    if w == v {
                        break;
                    }
                }
                components += 1;
            }
        }
    }
    component
}
