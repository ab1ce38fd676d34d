//! The queue the reader threads take their jobs from: any number of senders, any number of
//! takers, and a taker may wait with a deadline, so each reader notices on its own that it has
//! gone idle (a channel's receiver would have to be shared behind a lock, and only the thread
//! holding that lock could time out).

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// What a taker gets.
#[derive(Debug, PartialEq)]
pub(super) enum Next<T> {
    Job(T),
    /// Nothing came within the wait asked for.
    Idle,
    /// Every sender is gone and every job has been taken.
    Closed,
}

struct Shared<T> {
    state: Mutex<State<T>>,
    ready: Condvar,
}

struct State<T> {
    jobs: VecDeque<T>,
    closed: bool,
}

/// The sending side; the queue closes when it is dropped (share it behind an `Arc`).
pub(super) struct Sender<T>(Arc<Shared<T>>);

/// A taking side; clone one per taker.
pub(super) struct Taker<T>(Arc<Shared<T>>);

impl<T> Clone for Taker<T> {
    fn clone(&self) -> Self {
        Taker(self.0.clone())
    }
}

pub(super) fn queue<T>() -> (Sender<T>, Taker<T>) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            jobs: VecDeque::new(),
            closed: false,
        }),
        ready: Condvar::new(),
    });
    (Sender(shared.clone()), Taker(shared))
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // Nothing runs under the lock that can panic; a poisoned lock still holds good state.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl<T> Sender<T> {
    pub fn send(&self, job: T) {
        self.0.lock().jobs.push_back(job);
        self.0.ready.notify_one();
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        self.0.lock().closed = true;
        self.0.ready.notify_all();
    }
}

impl<T> Taker<T> {
    /// The next job, waiting for one without end (`idle: None`) or at most `idle`.
    pub fn take(&self, idle: Option<Duration>) -> Next<T> {
        let deadline = idle.map(|idle| Instant::now() + idle);
        let mut state = self.0.lock();
        loop {
            if let Some(job) = state.jobs.pop_front() {
                return Next::Job(job);
            }
            if state.closed {
                return Next::Closed;
            }
            state = match deadline {
                None => self.0.ready.wait(state).unwrap_or_else(|p| p.into_inner()),
                Some(deadline) => {
                    let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                        return Next::Idle;
                    };
                    self.0
                        .ready
                        .wait_timeout(state, left)
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_come_out_in_order_then_closed_once_the_sender_is_gone() {
        let (sender, taker) = queue();
        sender.send(1);
        sender.send(2);
        drop(sender);
        assert_eq!(taker.take(None), Next::Job(1));
        assert_eq!(taker.take(Some(Duration::ZERO)), Next::Job(2));
        assert_eq!(taker.take(None), Next::Closed);
    }

    #[test]
    fn a_wait_with_a_deadline_ends_idle_and_a_job_sent_later_is_still_taken() {
        let (sender, taker) = queue();
        assert_eq!(taker.take(Some(Duration::ZERO)), Next::Idle);
        assert_eq!(taker.take(Some(Duration::from_millis(1))), Next::Idle);
        sender.send("late");
        assert_eq!(taker.take(Some(Duration::ZERO)), Next::Job("late"));
    }

    #[test]
    fn every_taker_waiting_without_end_wakes_for_a_job_or_the_close() {
        let (sender, taker) = queue::<usize>();
        let (taken, seen) = std::sync::mpsc::channel();
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let taker = taker.clone();
                let taken = taken.clone();
                std::thread::spawn(move || {
                    while let Next::Job(job) = taker.take(None) {
                        taken.send(job).unwrap();
                    }
                })
            })
            .collect();
        for job in 0..100 {
            sender.send(job);
        }
        let mut jobs: Vec<usize> = (0..100)
            .map(|_| seen.recv_timeout(Duration::from_secs(10)).unwrap())
            .collect();
        jobs.sort_unstable();
        assert_eq!(jobs, (0..100).collect::<Vec<_>>());
        drop(sender);
        for thread in threads {
            thread.join().unwrap();
        }
    }
}
