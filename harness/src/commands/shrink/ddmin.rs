//! Delta debugging (Zeller's ddmin) over a failing schedule's faults: split the set
//! into `n` chunks; keep a chunk that still fails, else a complement that does,
//! else split finer — until no single fault can be taken out. Pure: the test is a
//! callback (running real campaigns), which may also say the budget is spent.

/// What a test of a subset said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tested {
    Fails,
    Passes,
    /// No more tests: the budget is spent.
    OutOfBudget,
}

/// The smallest subset of `items` that `test` still finds failing (1-minimal when
/// the budget lasts: taking out any one item makes it pass), given that `items`
/// fails. The empty set is tried first (unless `items` is empty: nothing to try);
/// once a few items are left, each is taken out in turn ([`one_out`]).
pub fn ddmin<T: Clone>(items: Vec<T>, mut test: impl FnMut(&[T]) -> Tested) -> Vec<T> {
    // Nothing to take out: the empty set is the one that reproduced.
    if items.is_empty() {
        return items;
    }
    match test(&[]) {
        Tested::Fails => return Vec::new(),
        Tested::OutOfBudget => return items,
        Tested::Passes => {}
    }
    let mut current = items;
    let mut n = 2usize;
    while current.len() > FEW {
        let chunks = split(&current, n);
        let mut reduced = false;
        for chunk in &chunks {
            match test(chunk) {
                Tested::Fails => {
                    current = chunk.clone();
                    n = 2;
                    reduced = true;
                    break;
                }
                Tested::OutOfBudget => return current,
                Tested::Passes => {}
            }
        }
        // With two chunks, each complement is the other chunk: already tested.
        if !reduced && n > 2 {
            for i in 0..chunks.len() {
                let complement: Vec<T> = chunks
                    .iter()
                    .enumerate()
                    .filter(|&(j, _)| j != i)
                    .flat_map(|(_, c)| c.iter().cloned())
                    .collect();
                match test(&complement) {
                    Tested::Fails => {
                        current = complement;
                        n = (n - 1).max(2);
                        reduced = true;
                        break;
                    }
                    Tested::OutOfBudget => return current,
                    Tested::Passes => {}
                }
            }
        }
        if !reduced {
            if n >= current.len() {
                return current;
            }
            n = (2 * n).min(current.len());
        }
    }
    one_out(current, test)
}

/// At most this many items left, ddmin takes them out one at a time.
const FEW: usize = 6;

/// Take out one item at a time (its complement tried), keeping each removal that
/// still fails, until none can go: for a few items — often the faults of one
/// pattern, which rarely fail in small chunks alone — the complements reach a
/// 1-minimal set in fewer tests than chunks first.
fn one_out<T: Clone>(mut current: Vec<T>, mut test: impl FnMut(&[T]) -> Tested) -> Vec<T> {
    let mut i = 0;
    while current.len() >= 2 && i < current.len() {
        let mut without = current.clone();
        without.remove(i);
        match test(&without) {
            Tested::Fails => current = without,
            Tested::Passes => i += 1,
            Tested::OutOfBudget => return current,
        }
    }
    current
}

/// A schedule's faults as the patterns that played them: each run of consecutive
/// faults with the same trigger is one unit (indices in order); a fault without a
/// trigger is a unit of its own.
pub fn patterns(triggers: &[Option<&str>]) -> Vec<Vec<usize>> {
    let mut units: Vec<Vec<usize>> = Vec::new();
    for (i, t) in triggers.iter().enumerate() {
        match units.last_mut() {
            Some(u) if t.is_some() && triggers[u[0]] == *t => u.push(i),
            _ => units.push(vec![i]),
        }
    }
    units
}

/// `items` in `n` chunks of nearly equal size, in order.
fn split<T: Clone>(items: &[T], n: usize) -> Vec<Vec<T>> {
    let n = n.clamp(1, items.len().max(1));
    let mut out = Vec::with_capacity(n);
    let mut start = 0;
    for i in 0..n {
        let end = start + (items.len() - start) / (n - i);
        out.push(items[start..end].to_vec());
        start = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test that fails when the subset holds every one of `needed`, counting calls.
    fn needs<'a>(needed: &'static [u32], calls: &'a mut u32) -> impl FnMut(&[u32]) -> Tested + 'a {
        move |s: &[u32]| {
            *calls += 1;
            if needed.iter().all(|n| s.contains(n)) {
                Tested::Fails
            } else {
                Tested::Passes
            }
        }
    }

    #[test]
    fn one_fault_that_matters_is_found_among_forty() {
        let mut calls = 0;
        let min = ddmin((0..40).collect(), needs(&[17], &mut calls));
        assert_eq!(min, vec![17]);
        assert!(calls <= 20, "{calls} tests");
    }

    /// Five faults of which three matter: each of the others taken out once, in
    /// one pass, and each of the three tried once more.
    #[test]
    fn a_few_faults_are_taken_out_one_at_a_time() {
        let mut calls = 0;
        let min = ddmin((0..5).collect(), needs(&[0, 2, 4], &mut calls));
        assert_eq!(min, vec![0, 2, 4]);
        // The empty set, then 0 (kept), 1 (out), 2 (kept), 3 (out), 4 (kept).
        assert_eq!(calls, 6);
    }

    #[test]
    fn two_faults_that_must_overlap_are_both_kept() {
        let mut calls = 0;
        let min = ddmin((0..40).collect(), needs(&[3, 31], &mut calls));
        assert_eq!(min, vec![3, 31]);
    }

    #[test]
    fn a_failure_without_faults_needs_none() {
        let mut calls = 0;
        assert!(ddmin((0..10).collect(), needs(&[], &mut calls)).is_empty());
        assert_eq!(calls, 1);
    }

    #[test]
    fn nothing_to_take_out_is_not_tried_again() {
        let mut calls = 0;
        assert!(ddmin(Vec::<u32>::new(), needs(&[], &mut calls)).is_empty());
        assert_eq!(calls, 0);
    }

    #[test]
    fn a_spent_budget_keeps_the_smallest_failing_set_so_far() {
        let mut calls = 0;
        let min = ddmin((0..40).collect(), |s: &[u32]| {
            calls += 1;
            match calls {
                1 => Tested::Passes,
                2 => {
                    assert_eq!(s.len(), 20);
                    Tested::Fails
                }
                _ => Tested::OutOfBudget,
            }
        });
        assert_eq!(min, (0..20).collect::<Vec<_>>());
    }

    #[test]
    fn the_faults_of_one_pattern_are_one_unit() {
        let t = [
            Some("follower-lag (a)"),
            Some("follower-lag (a)"),
            None,
            None,
            Some("crash-all (b)"),
            Some("follower-lag (a)"),
        ];
        assert_eq!(
            patterns(&t),
            vec![vec![0, 1], vec![2], vec![3], vec![4], vec![5]]
        );
        assert!(patterns(&[]).is_empty());
    }

    #[test]
    fn chunks_cover_the_items_in_order() {
        assert_eq!(split(&[1, 2, 3, 4, 5], 2), vec![vec![1, 2], vec![3, 4, 5]]);
        assert_eq!(split(&[1, 2, 3], 3), vec![vec![1], vec![2], vec![3]]);
    }
}
