//! The queue the reader threads and the writer take their jobs from: any number of senders,
//! any number of takers, each of which notices on its own that its queue has gone idle, so it
//! can hand memory back (a channel's receiver would have to be shared behind a lock, and only
//! the thread holding that lock could time out). Idle means no job was sent to the queue for
//! the queue's idle time, not that this taker got none: under a light load, whose jobs a few of
//! the takers share, none of them is idle. A taker hears `Idle` once per idle spell, and only if
//! it has taken a job since the last one.

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
pub(super) struct Taker<T> {
    shared: Arc<Shared<T>>,
    /// How long no job must be sent before a taker that has worked hears `Idle`.
    idle: Duration,
    /// Whether this taker has taken a job since it last heard `Idle`.
    worked: bool,
}

impl<T> Clone for Taker<T> {
    fn clone(&self) -> Self {
        self.shared.lock().takers += 1;
        Taker {
            shared: self.shared.clone(),
            idle: self.idle,
            worked: false,
        }
    }
}

impl<T> Drop for Taker<T> {
    fn drop(&mut self) {
        self.shared.lock().takers -= 1;
    }
}

/// A queue whose takers hear `Idle` once no job has been sent for `idle`.
pub(super) fn queue<T>(idle: Duration) -> (Sender<T>, Taker<T>) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            jobs: VecDeque::new(),
            closed: false,
            sent_at: None,
            takers: 1,
        }),
        ready: Condvar::new(),
    });
    let taker = Taker {
        shared: shared.clone(),
        idle,
        worked: false,
    };
    (Sender(shared), taker)
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // Nothing runs under the lock that can panic; a poisoned lock still holds good state.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl<T> Sender<T> {
    /// Jobs queued and not yet taken.
    pub fn len(&self) -> usize {
        self.0.lock().jobs.len()
    }

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
    /// The next job. A taker that has taken one since it last heard `Idle` waits until no job
    /// has been sent for the queue's idle time, then hears `Idle`; any other waits without end.
    pub fn next(&mut self) -> Next<T> {
        let next = self.take(self.worked.then_some(self.idle));
        self.worked = matches!(next, Next::Job(_));
        next
    }

    /// A job already queued, without waiting.
    pub fn try_next(&mut self) -> Option<T> {
        match self.take(Some(Duration::ZERO)) {
            Next::Job(job) => {
                self.worked = true;
                Some(job)
            }
            Next::Idle | Next::Closed => None,
        }
    }

    /// The next job, waiting for one without end (`idle: None`), or until no job has been sent
    /// to the queue for `idle` since this wait began (then `Idle`).
    fn take(&self, idle: Option<Duration>) -> Next<T> {
        let began = Instant::now();
        let mut state = self.shared.lock();
        loop {
            if let Some(job) = state.jobs.pop_front() {
                return Next::Job(job);
            }
            if state.closed {
                return Next::Closed;
            }
            state = match idle {
                None => self
                    .shared
                    .ready
                    .wait(state)
                    .unwrap_or_else(|p| p.into_inner()),
                Some(idle) => {
                    // A job sent meanwhile (and taken by another taker) starts the wait over.
                    let quiet_since = state.sent_at.map_or(began, |sent| sent.max(began));
                    let Some(left) = (quiet_since + idle).checked_duration_since(Instant::now())
                    else {
                        return Next::Idle;
                    };
                    self.shared
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
        let (sender, taker) = queue(Duration::from_secs(1));
        sender.send(1).unwrap();
        sender.send(2).unwrap();
        drop(sender);
        assert_eq!(taker.take(None), Next::Job(1));
        assert_eq!(taker.take(Some(Duration::ZERO)), Next::Job(2));
        assert_eq!(taker.take(None), Next::Closed);
    }

    #[test]
    fn a_job_is_refused_once_no_taker_is_left() {
        let (sender, taker) = queue(Duration::from_secs(1));
        let other = taker.clone();
        drop(taker);
        sender.send(1).unwrap();
        assert_eq!(other.take(None), Next::Job(1));
        drop(other);
        assert_eq!(sender.send(2), Err(2));
    }

    #[test]
    fn a_wait_with_a_deadline_ends_idle_and_a_job_sent_later_is_still_taken() {
        let (sender, taker) = queue(Duration::from_secs(1));
        assert_eq!(taker.take(Some(Duration::ZERO)), Next::Idle);
        assert_eq!(taker.take(Some(Duration::from_millis(1))), Next::Idle);
        sender.send("late").unwrap();
        assert_eq!(taker.take(Some(Duration::ZERO)), Next::Job("late"));
    }

    #[test]
    fn a_taker_that_worked_hears_idle_once_the_queue_is_quiet() {
        let (sender, mut taker) = queue(Duration::ZERO);
        sender.send(1).unwrap();
        assert_eq!(taker.next(), Next::Job(1));
        assert_eq!(taker.next(), Next::Idle);
        sender.send(2).unwrap();
        sender.send(3).unwrap();
        assert_eq!(taker.try_next(), Some(2));
        assert_eq!(taker.try_next(), Some(3));
        assert_eq!(taker.try_next(), None);
        // Jobs taken without waiting are work too.
        assert_eq!(taker.next(), Next::Idle);
        drop(sender);
        // Not idle again without work: it waits, and hears of the close.
        assert_eq!(taker.next(), Next::Closed);
    }

    /// Starts `takers` threads that take with `idle` until the close, sends `jobs` jobs, checks
    /// that every one was taken exactly once, then closes the queue and joins the threads.
    fn every_job_taken_once(takers: usize, idle: Option<Duration>, jobs: usize) {
        let (sender, taker) = queue::<usize>(Duration::from_secs(1));
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
