//! The queue the reader threads take their jobs from: any number of senders, any number of
//! takers, and a taker may wait with a deadline, so each reader notices on its own that the
//! readers have gone idle (a channel's receiver would have to be shared behind a lock, and only
//! the thread holding that lock could time out). Idle means no job was sent to the queue for
//! the whole wait, not that this taker got none: under a light load, whose jobs a few of the
//! takers share, none of them is idle.

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
    /// When the last job was sent.
    sent_at: Option<Instant>,
    /// Takers alive: with none left a job would never be taken, so it is refused.
    takers: usize,
}

/// The sending side; the queue closes when it is dropped (share it behind an `Arc`).
pub(super) struct Sender<T>(Arc<Shared<T>>);

/// A taking side; clone one per taker.
pub(super) struct Taker<T>(Arc<Shared<T>>);

impl<T> Clone for Taker<T> {
    fn clone(&self) -> Self {
        self.0.lock().takers += 1;
        Taker(self.0.clone())
    }
}

impl<T> Drop for Taker<T> {
    fn drop(&mut self) {
        self.0.lock().takers -= 1;
    }
}

pub(super) fn queue<T>() -> (Sender<T>, Taker<T>) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            jobs: VecDeque::new(),
            closed: false,
            sent_at: None,
            takers: 1,
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
    /// Queues `job`, or hands it back when no taker is left to take it.
    pub fn send(&self, job: T) -> Result<(), T> {
        {
            let mut state = self.0.lock();
            if state.takers == 0 {
                return Err(job);
            }
            state.jobs.push_back(job);
            state.sent_at = Some(Instant::now());
        }
        self.0.ready.notify_one();
        Ok(())
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        self.0.lock().closed = true;
        self.0.ready.notify_all();
    }
}

impl<T> Taker<T> {
    /// The next job, waiting for one without end (`idle: None`), or until no job has been sent
    /// to the queue for `idle` since this wait began (then `Idle`).
    pub fn take(&self, idle: Option<Duration>) -> Next<T> {
        let began = Instant::now();
        let mut state = self.0.lock();
        loop {
            if let Some(job) = state.jobs.pop_front() {
                return Next::Job(job);
            }
            if state.closed {
                return Next::Closed;
            }
            state = match idle {
                None => self.0.ready.wait(state).unwrap_or_else(|p| p.into_inner()),
                Some(idle) => {
                    // A job sent meanwhile (and taken by another taker) starts the wait over.
                    let quiet_since = state.sent_at.map_or(began, |sent| sent.max(began));
                    let Some(left) = (quiet_since + idle).checked_duration_since(Instant::now())
                    else {
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
        sender.send(1).unwrap();
        sender.send(2).unwrap();
        drop(sender);
        assert_eq!(taker.take(None), Next::Job(1));
        assert_eq!(taker.take(Some(Duration::ZERO)), Next::Job(2));
        assert_eq!(taker.take(None), Next::Closed);
    }

    #[test]
    fn a_job_is_refused_once_no_taker_is_left() {
        let (sender, taker) = queue();
        let other = taker.clone();
        drop(taker);
        sender.send(1).unwrap();
        assert_eq!(other.take(None), Next::Job(1));
        drop(other);
        assert_eq!(sender.send(2), Err(2));
    }

    #[test]
    fn a_wait_with_a_deadline_ends_idle_and_a_job_sent_later_is_still_taken() {
        let (sender, taker) = queue();
        assert_eq!(taker.take(Some(Duration::ZERO)), Next::Idle);
        assert_eq!(taker.take(Some(Duration::from_millis(1))), Next::Idle);
        sender.send("late").unwrap();
        assert_eq!(taker.take(Some(Duration::ZERO)), Next::Job("late"));
    }

    /// Starts `takers` threads that take with `idle` until the close, sends `jobs` jobs, checks
    /// that every one was taken exactly once, then closes the queue and joins the threads.
    fn every_job_taken_once(takers: usize, idle: Option<Duration>, jobs: usize) {
        let (sender, taker) = queue::<usize>();
        let (taken, seen) = std::sync::mpsc::channel();
        let threads: Vec<_> = (0..takers)
            .map(|_| {
                let taker = taker.clone();
                let taken = taken.clone();
                std::thread::spawn(move || {
                    loop {
                        match taker.take(idle) {
                            Next::Job(job) => taken.send(job).unwrap(),
                            Next::Idle => {}
                            Next::Closed => return,
                        }
                    }
                })
            })
            .collect();
        for job in 0..jobs {
            sender.send(job).unwrap();
            if job % 100 == 99 {
                std::thread::yield_now();
            }
        }
        let mut seen: Vec<usize> = (0..jobs)
            .map(|_| seen.recv_timeout(Duration::from_secs(10)).unwrap())
            .collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..jobs).collect::<Vec<_>>());
        drop(sender);
        for thread in threads {
            thread.join().unwrap();
        }
    }

    #[test]
    fn takers_waiting_with_deadlines_take_every_job_and_end_at_the_close() {
        every_job_taken_once(3, Some(Duration::from_millis(20)), 300);
    }

    #[test]
    fn every_taker_waiting_without_end_wakes_for_a_job_or_the_close() {
        every_job_taken_once(4, None, 100);
    }
}
