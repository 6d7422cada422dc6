//! Every runtime against the same checks: fork-join recursion, batches of
//! tasks, tasks that block on each other, panics, pinning, worker counts.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use super::*;

fn fib<R: Runtime>(rt: &R, n: u64) -> u64 {
    if n < 12 {
        return (0..n).fold((0u64, 1u64), |(a, b), _| (b, a + b)).0;
    }
    let (a, b) = rt.join(|| fib(rt, n - 1), || fib(rt, n - 2));
    a + b
}

fn check<R: Runtime>() {
    for workers in [1, 2, 3] {
        let rt = R::build(workers, None).unwrap();
        assert_eq!(rt.workers(), workers, "{}", R::NAME);
        let coarse = if R::FINE_GRAINED { 25 } else { 16 };
        let expect = (0..coarse).fold((0u64, 1u64), |(a, b), _| (b, a + b)).0;
        assert_eq!(rt.install(|| fib(&rt, coarse)), expect, "{} fib({coarse}) on {workers}", R::NAME);

        // A batch of tasks, each nesting a join.
        let n = if R::FINE_GRAINED { 10_000 } else { 40 };
        let sum = AtomicU64::new(0);
        rt.install(|| {
            rt.for_each_task(n, &|i| {
                let (a, b) = rt.join(|| i as u64, || 1);
                sum.fetch_add(a + b, Ordering::Relaxed);
            })
        });
        assert_eq!(sum.into_inner(), (n * (n - 1) / 2 + n) as u64, "{}", R::NAME);

        // `workers` tasks that can only finish together.
        let arrived = AtomicUsize::new(0);
        rt.install(|| {
            rt.for_each_task(workers, &|_| {
                arrived.fetch_add(1, Ordering::SeqCst);
                let t = std::time::Instant::now();
                while arrived.load(Ordering::SeqCst) < workers {
                    assert!(t.elapsed().as_secs() < 10, "{}: tasks did not run together", R::NAME);
                    std::hint::spin_loop();
                }
            })
        });
    }
}

#[test]
fn rayon_passes() {
    check::<Rayon>();
}

#[test]
fn global_queue_passes() {
    check::<GlobalQueue>();
}

#[test]
fn spawn_passes() {
    check::<Spawn>();
}

#[test]
fn team_passes() {
    check::<Team>();
}

#[test]
fn panics_in_tasks_reach_the_caller_and_the_pool_survives() {
    fn panics<R: Runtime>() {
        let rt = R::build(2, None).unwrap();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rt.install(|| rt.join(|| 1, || -> u32 { panic!("task b") }))));
        assert!(r.is_err(), "{}", R::NAME);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rt.install(|| rt.for_each_task(4, &|i| assert_ne!(i, 2)))));
        assert!(r.is_err(), "{}", R::NAME);
        assert_eq!(rt.install(|| rt.join(|| 2, || 3)), (2, 3), "{} still works", R::NAME);
    }
    panics::<Rayon>();
    panics::<GlobalQueue>();
    panics::<Spawn>();
    panics::<Team>();
}

#[test]
fn workers_are_pinned_where_asked_and_bad_cpus_are_errors() {
    let allowed = crate::measure::affinity::current_thread().unwrap();
    let cpu = *allowed.last().unwrap();
    fn seen<R: Runtime>(cpu: usize) -> Vec<usize> {
        let rt = R::build(2, Some(&[cpu])).unwrap();
        let out = std::sync::Mutex::new(Vec::new());
        rt.install(|| rt.for_each_task(2, &|_| out.lock().unwrap().extend(crate::measure::affinity::current_thread().unwrap())));
        out.into_inner().unwrap()
    }
    assert!(seen::<Rayon>(cpu).iter().all(|&c| c == cpu));
    assert!(seen::<GlobalQueue>(cpu).iter().all(|&c| c == cpu));
    assert!(seen::<Spawn>(cpu).iter().all(|&c| c == cpu));
    assert!(seen::<Team>(cpu).iter().all(|&c| c == cpu));
    assert!(Rayon::build(2, Some(&[4000])).is_err());
    assert!(GlobalQueue::build(2, Some(&[4000])).is_err());
    assert!(Spawn::build(2, Some(&[4000])).is_err());
    assert!(Team::build(2, Some(&[4000])).is_err());
}

#[test]
fn spawn_never_runs_more_task_threads_than_workers() {
    for workers in [1, 2, 3] {
        let rt = Spawn::build(workers, None).unwrap();
        let (now, peak) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let enter = || {
            let n = now.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(n, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(2));
            now.fetch_sub(1, Ordering::SeqCst);
        };
        rt.install(|| rt.for_each_task(10, &|_| enter()));
        assert_eq!(peak.load(Ordering::SeqCst), workers, "for_each_task on {workers} workers");
        peak.store(0, Ordering::SeqCst);
        fn tree<R: Runtime>(rt: &R, depth: u32, leaf: &(dyn Fn() + Sync)) {
            if depth == 0 {
                return leaf();
            }
            rt.join(|| tree(rt, depth - 1, leaf), || tree(rt, depth - 1, leaf));
        }
        rt.install(|| tree(&rt, 4, &enter));
        assert!(peak.load(Ordering::SeqCst) <= workers, "join on {workers} workers ran {} at once", peak.load(Ordering::SeqCst));
    }
}

#[test]
fn deep_fork_join_on_the_global_queue_does_not_overflow_a_stack() {
    // A fine fork-join tree on two workers: waiting threads help each other,
    // and without the help-depth limit their frames nested until a stack overflowed.
    fn fib_fine<R: Runtime>(rt: &R, n: u64) -> u64 {
        if n < 5 {
            return (0..n).fold((0u64, 1u64), |(a, b), _| (b, a + b)).0;
        }
        let (a, b) = rt.join(|| fib_fine(rt, n - 1), || fib_fine(rt, n - 2));
        a + b
    }
    let rt = GlobalQueue::build(2, None).unwrap();
    for _ in 0..4 {
        assert_eq!(rt.install(|| fib_fine(&rt, 30)), 832_040);
    }
}

#[test]
fn the_global_queue_counts_its_queue_and_lock_and_the_others_say_why_not() {
    let rt = GlobalQueue::build(1, None).unwrap();
    assert_eq!(rt.counters().queue_max_len, Some(0), "nothing queued yet");
    // One worker: the install hands the root to it (queued by this thread,
    // run by the worker: one steal); fib(13) joins (queuing fib(11)) and its
    // first half fib(12) joins again (queuing fib(10)): two queued at once,
    // both run by the worker that queued them.
    assert_eq!(rt.install(|| fib(&rt, 13)), 233);
    let c = rt.counters();
    assert_eq!((c.steals, c.queue_max_len), (Some(1), Some(2)), "{c:?}");
    assert!(c.lock_acquisitions.is_some_and(|a| a >= 3) && c.lock_waits.is_some(), "{c:?}");
    // A batch of 100 queued at once by the worker that runs them: the queue holds 100.
    rt.install(|| rt.for_each_task(100, &|_| {}));
    let c = rt.counters();
    assert_eq!((c.steals, c.queue_max_len), (Some(2), Some(100)), "{c:?}");
    let d = c.details(4);
    assert_eq!((d["steals_per_sample"].as_f64(), d["queue_max_len"].as_u64()), (Some(0.5), Some(100)), "{d}");
    let r = Rayon::build(1, None).unwrap().counters();
    assert!(r.steals.is_none() && r.note.is_some_and(|n| n.contains("rayon does not expose steals")), "{r:?}");
    assert!(Spawn::build(1, None).unwrap().counters().note.is_some());
}

/// The name of the thread running the caller.
fn thread_name() -> String {
    std::thread::current().name().unwrap_or("?").to_string()
}

#[test]
fn the_team_hands_forks_to_idle_members_in_order_and_counts_them() {
    for workers in [1, 2, 4] {
        let rt = Team::build(workers, None).unwrap();
        assert_eq!(rt.counters().steals, Some(0));
        // From member 0 with every member idle: a fork tree of `workers`
        // leaves puts one on each member; with two members, the same one
        // every time (OpenMP's static schedule).
        // Each leaf waits for all the others, so no member can run two.
        let leaves = |rt: &Team| {
            let names = std::sync::Mutex::new(vec![String::new(); workers]);
            let arrived = AtomicUsize::new(0);
            rt.install(|| {
                rt.for_each_task(workers, &|i| {
                    names.lock().unwrap()[i] = thread_name();
                    arrived.fetch_add(1, Ordering::SeqCst);
                    let t = std::time::Instant::now();
                    while arrived.load(Ordering::SeqCst) < workers {
                        assert!(t.elapsed().as_secs() < 10, "the leaves did not run together");
                        std::hint::spin_loop();
                    }
                })
            });
            names.into_inner().unwrap()
        };
        let first = leaves(&rt);
        let mut sorted = first.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), workers, "{workers} members ran {first:?}");
        assert_eq!(first[0], "team-0", "the installing member runs the first block");
        for _ in 0..20 {
            let again = leaves(&rt);
            let mut members = again.clone();
            members.sort();
            assert_eq!(members, sorted, "one leaf per member");
            if workers <= 2 {
                assert_eq!(again, first, "the same blocks go to the same members");
            }
        }
        // Every fork but those of a one-member team went to another member.
        assert_eq!(rt.counters().steals, Some(21 * (workers as u64 - 1)), "{workers} members");
        // A fork while every other member is busy runs in place: `b` holds
        // the only other member of two until the inner fork is over.
        if workers == 2 {
            let inner_over = std::sync::atomic::AtomicBool::new(false);
            let (inner, outer_b) = rt.install(|| {
                rt.join(
                    || {
                        let r = rt.join(thread_name, thread_name);
                        inner_over.store(true, Ordering::SeqCst);
                        r
                    },
                    || {
                        while !inner_over.load(Ordering::SeqCst) {
                            std::hint::spin_loop();
                        }
                        thread_name()
                    },
                )
            });
            assert_eq!((inner.0.as_str(), inner.1.as_str(), outer_b.as_str()), ("team-0", "team-0", "team-1"));
        }
    }
}

#[test]
fn a_member_of_one_team_is_not_a_member_of_another() {
    let (a, b) = (Team::build(2, None).unwrap(), Team::build(2, None).unwrap());
    let id = || std::thread::current().id();
    // From a's member 0, b's install still hands its closure to b's member 0
    // (not run in place, as for one of b's own), and b's fork goes to b's other member.
    let (on_a, on_b) = a.install(|| (id(), b.install(|| b.join(id, id))));
    assert_ne!(on_a, on_b.0, "b's install ran on a's member");
    assert_ne!(on_b.0, on_b.1, "b's fork ran in place");
    assert_eq!(b.counters().steals, Some(1), "the fork went to b's member 1");
    assert_eq!(a.counters().steals, Some(0));
}

#[test]
fn team_members_sleep_after_spinning_and_wake_for_work() {
    let rt = Team::build(2, None).unwrap();
    // Longer than the spin: both members have gone to sleep and must be
    // woken, by the install (member 0), the fork (member 1), and the end of
    // each (the caller, then member 0). A lost wake-up would be found only
    // by the sleeping member's 100 ms timeout: the fastest of three rounds
    // stays far below it.
    let mut fastest = std::time::Duration::MAX;
    for _ in 0..3 {
        std::thread::sleep(team::SPIN * 20);
        let t = std::time::Instant::now();
        assert_eq!(rt.install(|| rt.join(|| 1, || 2)), (1, 2));
        fastest = fastest.min(t.elapsed());
    }
    assert!(fastest < std::time::Duration::from_millis(50), "woken after {fastest:?}: a wake-up was lost");
    // More members than this process may use: the short spin, same answers.
    let cpus = crate::measure::affinity::current_thread().unwrap().len();
    let big = Team::build(cpus + 2, None).unwrap();
    assert_eq!(big.install(|| fib(&big, 20)), 6765);
}
