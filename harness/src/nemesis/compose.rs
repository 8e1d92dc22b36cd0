//! Schedules made of schedules: [`Mix`] plays several sources at once (each step
//! when it falls due, the earliest first), [`Sequence`] plays them one after the
//! other (each one's faults ended before the next begins), [`Stagger`] spreads a
//! source's steps out by a seeded factor. Each is a [`Source`] itself, so they nest.

use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::schedule::{Next, Now, Source, Step, Taken};

/// What a child of a mix will do next, and when (on the schedule's clock).
#[derive(Debug)]
enum Due {
    /// Take the step at `at`; `bounded`: unless the time limit comes first.
    Step {
        at: Duration,
        step: Step,
        bounded: bool,
    },
    /// Ask it again at `at`.
    Ask {
        at: Duration,
    },
    Done,
}

/// Several sources at once.
pub struct Mix {
    children: Vec<(Box<dyn Source>, Option<Due>)>,
    /// The child whose step was handed out last.
    last: Option<usize>,
}

impl Mix {
    pub fn new(sources: Vec<Box<dyn Source>>) -> Mix {
        Mix {
            children: sources.into_iter().map(|s| (s, None)).collect(),
            last: None,
        }
    }

    fn at(due: &Due) -> Option<Duration> {
        match due {
            Due::Step { at, .. } | Due::Ask { at } => Some(*at),
            Due::Done => None,
        }
    }
}

impl Source for Mix {
    fn wants_look(&self) -> bool {
        self.children
            .iter()
            .any(|(s, due)| due.is_none() && s.wants_look())
    }

    fn to_the_end(&self) -> bool {
        self.children.iter().all(|(s, _)| s.to_the_end())
    }

    fn next(&mut self, now: &Now<'_>) -> Next {
        for (source, due) in &mut self.children {
            let asked = match due {
                None => true,
                Some(Due::Ask { at }) => *at <= now.elapsed,
                _ => false,
            };
            if !asked {
                continue;
            }
            *due = Some(match source.next(now) {
                Next::After(d, step) => Due::Step {
                    at: now.elapsed + d,
                    step,
                    bounded: true,
                },
                Next::Now(step) => Due::Step {
                    at: now.elapsed,
                    step,
                    bounded: false,
                },
                Next::Wait(d) => Due::Ask {
                    at: now.elapsed + d,
                },
                Next::Done => Due::Done,
                Next::Fail(why) => return Next::Fail(why),
            });
        }
        let earliest = self
            .children
            .iter()
            .enumerate()
            .filter_map(|(i, (_, due))| due.as_ref().and_then(Mix::at).map(|at| (at, i)))
            .min();
        let Some((at, i)) = earliest else {
            return Next::Done;
        };
        let wait = at.saturating_sub(now.elapsed);
        match self.children[i].1.take() {
            Some(Due::Step { step, bounded, .. }) => {
                self.last = Some(i);
                if bounded {
                    Next::After(wait, step)
                } else {
                    Next::Now(step)
                }
            }
            due => {
                self.children[i].1 = due;
                Next::Wait(wait)
            }
        }
    }

    fn taken(&mut self, taken: Taken) {
        if let Some(i) = self.last.take() {
            self.children[i].0.taken(taken);
        }
    }

    /// Every child's ending, once the steps it had drawn and not taken are known
    /// not to happen.
    fn wind_down(&mut self) -> Vec<Step> {
        let mut steps = Vec::new();
        for (source, due) in &mut self.children {
            if let Some(Due::Step { .. }) = due.take() {
                source.taken(Taken::TooLate);
            }
            steps.extend(source.wind_down());
        }
        steps
    }
}

/// Sources one after the other: each plays until it is done, its faults ended,
/// then the next.
pub struct Sequence {
    sources: std::collections::VecDeque<Box<dyn Source>>,
    /// The ending of the source that finished, still to be taken.
    ending: std::collections::VecDeque<Step>,
    /// The step handed out last was one of an ending.
    ended: bool,
}

impl Sequence {
    pub fn new(sources: Vec<Box<dyn Source>>) -> Sequence {
        Sequence {
            sources: sources.into(),
            ending: Default::default(),
            ended: false,
        }
    }
}

impl Source for Sequence {
    fn wants_look(&self) -> bool {
        self.ending.is_empty() && self.sources.front().is_some_and(|s| s.wants_look())
    }

    fn to_the_end(&self) -> bool {
        self.sources.iter().all(|s| s.to_the_end())
    }

    fn next(&mut self, now: &Now<'_>) -> Next {
        self.ended = false;
        loop {
            if let Some(step) = self.ending.pop_front() {
                self.ended = true;
                return Next::Now(step);
            }
            let Some(current) = self.sources.front_mut() else {
                return Next::Done;
            };
            match current.next(now) {
                Next::Done => {
                    self.ending.extend(current.wind_down());
                    self.sources.pop_front();
                }
                next => return next,
            }
        }
    }

    fn taken(&mut self, taken: Taken) {
        // The ending's steps are nobody's to be told of.
        if !self.ended
            && let Some(current) = self.sources.front_mut()
        {
            current.taken(taken);
        }
    }

    fn wind_down(&mut self) -> Vec<Step> {
        let mut steps: Vec<Step> = self.ending.drain(..).collect();
        if let Some(current) = self.sources.front_mut() {
            steps.extend(current.wind_down());
        }
        steps
    }
}

/// A source whose delays (and waits) are each multiplied by a factor drawn from the
/// seed, uniformly in `[0, 2 × spread]`: the same steps, spread out or packed in.
pub struct Stagger<S> {
    source: S,
    spread: f64,
    rng: ChaCha8Rng,
}

impl<S: Source> Stagger<S> {
    pub fn new(source: S, spread: f64, seed: u64) -> Stagger<S> {
        Stagger {
            source,
            spread: spread.max(0.0),
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    fn stretch(&mut self, d: Duration) -> Duration {
        d.mul_f64(self.rng.random_range(0.0..=2.0 * self.spread))
    }
}

impl<S: Source> Source for Stagger<S> {
    fn wants_look(&self) -> bool {
        self.source.wants_look()
    }

    fn to_the_end(&self) -> bool {
        self.source.to_the_end()
    }

    fn next(&mut self, now: &Now<'_>) -> Next {
        match self.source.next(now) {
            Next::After(d, step) => Next::After(self.stretch(d), step),
            Next::Wait(d) => Next::Wait(self.stretch(d)),
            other => other,
        }
    }

    fn taken(&mut self, taken: Taken) {
        self.source.taken(taken)
    }

    fn wind_down(&mut self) -> Vec<Step> {
        self.source.wind_down()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nemesis::action::Action;
    use crate::nemesis::coverage::Coverage;
    use crate::proc::Proc;

    /// Kills node `id` every `every`, `times` times; restarts what it killed at the
    /// end. Counts what it was told.
    struct Killer {
        id: i32,
        every: Duration,
        times: u32,
        killed: u32,
        too_late: u32,
    }

    fn killer(id: i32, every_ms: u64, times: u32) -> Killer {
        Killer {
            id,
            every: Duration::from_millis(every_ms),
            times,
            killed: 0,
            too_late: 0,
        }
    }

    impl Source for Killer {
        fn next(&mut self, _: &Now<'_>) -> Next {
            if self.killed + self.too_late >= self.times {
                return Next::Done;
            }
            Next::After(self.every, Step::Act(Action::Kill(Proc::Node(self.id))))
        }
        fn taken(&mut self, taken: Taken) {
            match taken {
                Taken::Applied(_) => self.killed += 1,
                Taken::TooLate => self.too_late += 1,
                _ => {}
            }
        }
        fn wind_down(&mut self) -> Vec<Step> {
            (0..self.killed)
                .map(|_| Step::Act(Action::Restart(Proc::Node(self.id))))
                .collect()
        }
    }

    /// Play `source` on a clock that jumps to each step: (when, action).
    fn timeline(source: &mut dyn Source) -> Vec<(u64, Action)> {
        let coverage = Coverage::new(0);
        let mut clock = Duration::ZERO;
        let mut out = Vec::new();
        for _ in 0..100 {
            let now = Now {
                elapsed: clock,
                left: None,
                view: None,
                coverage: &coverage,
            };
            match source.next(&now) {
                Next::After(d, Step::Act(a)) => {
                    clock += d;
                    out.push((clock.as_millis() as u64, a.clone()));
                    source.taken(Taken::Applied(a));
                }
                Next::Now(Step::Act(a)) => {
                    out.push((clock.as_millis() as u64, a.clone()));
                    source.taken(Taken::Applied(a));
                }
                Next::Wait(d) => clock += d,
                Next::Done => break,
                other => panic!("{other:?}"),
            }
        }
        out
    }

    #[test]
    fn a_mix_takes_each_step_when_it_falls_due() {
        let mut mix = Mix::new(vec![
            Box::new(killer(1, 300, 2)),
            Box::new(killer(2, 200, 3)),
        ]);
        let at: Vec<(u64, Proc)> = timeline(&mut mix)
            .into_iter()
            .map(|(t, a)| match a {
                Action::Kill(p) => (t, p),
                other => panic!("{other:?}"),
            })
            .collect();
        use Proc::Node;
        assert_eq!(
            at,
            [
                (200, Node(2)),
                (300, Node(1)),
                (400, Node(2)),
                (600, Node(1)),
                (600, Node(2))
            ]
        );
        let ends = mix.wind_down();
        assert_eq!(ends.len(), 5, "every kill is ended: {ends:?}");
    }

    #[test]
    fn a_sequence_ends_each_source_before_the_next() {
        let mut seq = Sequence::new(vec![
            Box::new(killer(1, 100, 1)),
            Box::new(killer(2, 100, 1)),
        ]);
        let steps: Vec<Action> = timeline(&mut seq).into_iter().map(|(_, a)| a).collect();
        use Proc::Node;
        assert_eq!(
            steps,
            [
                Action::Kill(Node(1)),
                Action::Restart(Node(1)),
                Action::Kill(Node(2)),
                Action::Restart(Node(2))
            ]
        );
        assert!(seq.wind_down().is_empty(), "nothing is left in force");
    }

    #[test]
    fn a_stagger_spreads_the_delays_from_its_seed() {
        let times = |seed| -> Vec<u64> {
            let mut s = Stagger::new(killer(1, 1000, 5), 1.0, seed);
            timeline(&mut s).into_iter().map(|(t, _)| t).collect()
        };
        assert_eq!(times(3), times(3));
        assert_ne!(times(3), times(4));
        let gaps: Vec<u64> = times(3).windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps.iter().all(|&g| g <= 2000), "{gaps:?}");
        assert!(gaps.iter().any(|&g| g != 1000), "{gaps:?}");
    }
}
