//! Knossos's mutex: `acquire` takes a free lock, `release` frees a held one.
//! Free initially (or held, as the initial state says).

use super::model::Model;

/// An operation on a mutex.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MutexOp {
    Acquire,
    Release,
}

/// A lock, held or free.
#[derive(Debug, Clone, Default)]
pub struct Mutex {
    /// Held before any operation.
    pub init: bool,
}

impl Model for Mutex {
    type Op = MutexOp;
    /// Held?
    type State = bool;
    type Arena = ();

    fn init(&self, _: &mut ()) -> bool {
        self.init
    }

    fn step(&self, _: &mut (), held: &bool, op: &MutexOp) -> Option<bool> {
        match op {
            MutexOp::Acquire => (!held).then_some(true),
            MutexOp::Release => held.then_some(false),
        }
    }

    fn describe_op(&self, op: &MutexOp) -> String {
        match op {
            MutexOp::Acquire => "acquire".to_string(),
            MutexOp::Release => "release".to_string(),
        }
    }

    fn describe_state(&self, _: &(), held: &bool) -> String {
        if *held { "held" } else { "free" }.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acquire_a_free_lock_release_a_held_one() {
        let m = Mutex::default();
        let free = m.init(&mut ());
        assert_eq!(m.step(&mut (), &free, &MutexOp::Acquire), Some(true));
        assert_eq!(m.step(&mut (), &free, &MutexOp::Release), None);
        assert_eq!(m.step(&mut (), &true, &MutexOp::Acquire), None);
        assert_eq!(m.step(&mut (), &true, &MutexOp::Release), Some(false));
        assert!(Mutex { init: true }.init(&mut ()));
        assert_eq!(m.describe_state(&(), &true), "held");
    }
}
