// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package fairqueue

import (
	"slices"
	"strings"
	"sync"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/metrics"
)

// One process reconciles the shoots of all projects with a fixed number of workers, and a project
// whose reconciles hang could hold them all. Two bounds keep them shared: a project holds at most
// its share, and a project with a reconcile in flight takes another only while more than the
// reserve is free. A request that may not have a worker waits here, without one.

// fairShares are the fair queue's bounds, in workers.
type fairShares struct {
	// workers is the controller's number of workers.
	workers int
	// share is the number of workers the shoots of one project may hold at once.
	share int
	// reserve is the number of workers that only a project with nothing in flight may take.
	reserve int
}

// newFairShares returns the bounds for workers workers: a project's share is percent of them,
// rounded up, at least one; the reserve is reservedPercent of them, rounded up, at least one while
// there is more than one worker.
func newFairShares(workers, percent, reservedPercent int) fairShares {
	share, reserve := WorkerShares(workers, percent, reservedPercent)
	return fairShares{workers: workers, share: share, reserve: reserve}
}

// WorkerShares returns, of workers workers, the share of one project (limits.projectWorkersPercent)
// and the reserve (limits.reservedWorkersPercent).
func WorkerShares(workers, percent, reservedPercent int) (share, reserve int) {
	return max(1, (workers*percent+99)/100), min(workers-1, max(1, (workers*reservedPercent+99)/100))
}

// admits reports whether a request of a project with busy requests in flight may take a worker
// while total requests are in flight. It never admits more for higher counts, so a request found
// ineligible stays so until a reconcile ends.
func (s fairShares) admits(busy, total int) bool {
	return busy < s.share && total < s.workers && (busy == 0 || total < s.workers-s.reserve)
}

// projectOfRequest returns the project of an Extension's request: its namespace is the shoot's
// seed namespace, shoot--<project>--<shoot>. Other namespaces (e.g. of a self-hosted shoot) have
// no project and no bound.
func projectOfRequest(req reconcile.Request) string {
	rest, ok := strings.CutPrefix(req.Namespace, "shoot--")
	if !ok {
		return ""
	}
	project, _, ok := strings.Cut(rest, "--")
	if !ok {
		return ""
	}
	return project
}

// fairQueue wraps the controller's queue so that the requests of the projects share the workers
// by the fairShares.
type fairQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	shares fairShares

	mu sync.Mutex
	// closed is set by the first shut down; nothing waits here afterwards.
	closed bool
	// total counts the requests handed to workers and not done yet, with and without a project;
	// busy counts them by project.
	total int
	busy  map[string]int
	// handedOut is the project ("" for none) of each request handed to a worker.
	handedOut map[reconcile.Request]string
	// parked are the requests of a project that may not have a worker yet, by seq; parkedSet holds
	// them for deduplication.
	parked    map[string][]*waitingRequest
	parkedSet map[reconcile.Request]*waitingRequest
	// inTransit are the requests taken from parked and added to the wrapped queue again, not yet
	// got by a worker; they count against the bounds as if handed out, so that one free worker is
	// not promised to several of them. transit counts them by project.
	inTransit map[reconcile.Request]*waitingRequest
	transit   map[string]int
	// seq orders the waiting requests by when they first had to wait.
	seq uint64

	// shutDown makes ShutDown idempotent; the wrapped queue panics on a second one.
	shutDown sync.Once
}

type waitingRequest struct {
	req      reconcile.Request
	project  string
	priority int
	seq      uint64
}

// New returns the queue constructor of a controller with workers workers, each project
// getting percent of them and reservedPercent kept for projects with nothing in flight. It wraps
// controller-runtime's priority queue, the default.
func New(workers, percent, reservedPercent int) func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return func(name string, rateLimiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		inner := priorityqueue.New(name, func(o *priorityqueue.Opts[reconcile.Request]) { o.RateLimiter = rateLimiter })
		return wrapFair(inner, newFairShares(workers, percent, reservedPercent))
	}
}

func wrapFair(inner priorityqueue.PriorityQueue[reconcile.Request], shares fairShares) *fairQueue {
	return &fairQueue{
		PriorityQueue: inner,
		shares:        shares,
		busy:          map[string]int{},
		handedOut:     map[reconcile.Request]string{},
		parked:        map[string][]*waitingRequest{},
		parkedSet:     map[reconcile.Request]*waitingRequest{},
		inTransit:     map[reconcile.Request]*waitingRequest{},
		transit:       map[string]int{},
	}
}

// Get implements workqueue.TypedInterface.
func (q *fairQueue) Get() (reconcile.Request, bool) {
	req, _, shutdown := q.GetWithPriority()
	return req, shutdown
}

// GetWithPriority hands out the next request the bounds admit. Another one is done in the wrapped
// queue and waits here; a copy of it added meanwhile joins the waiting one.
func (q *fairQueue) GetWithPriority() (reconcile.Request, int, bool) {
	for {
		req, priority, shutdown := q.PriorityQueue.GetWithPriority()
		if shutdown {
			return req, priority, true
		}
		project := projectOfRequest(req)
		var eligible []waitingRequest
		q.mu.Lock()
		if q.closed {
			// Shutting down: the wrapped queue returns shutdown on the next Get.
			q.mu.Unlock()
			q.PriorityQueue.Done(req)
			continue
		}
		if waiting := q.parkedSet[req]; waiting != nil {
			waiting.priority = max(waiting.priority, priority)
			q.mu.Unlock()
			q.PriorityQueue.Done(req)
			continue
		}
		waiting, inTransit := q.inTransit[req]
		if inTransit {
			q.leaveTransit(waiting)
		}
		if project == "" || q.shares.admits(q.busy[project], q.total) {
			q.total++
			q.handedOut[req] = project
			if project != "" {
				q.busy[project]++
			}
			q.mu.Unlock()
			return req, priority, false
		}
		if inTransit {
			// Another request took the worker it was meant for; it keeps its place in the order.
			waiting.priority = max(waiting.priority, priority)
		} else {
			q.seq++
			waiting = &waitingRequest{req: req, project: project, priority: priority, seq: q.seq}
		}
		q.park(waiting)
		if inTransit {
			// Leaving transit freed what it had counted against the bounds.
			eligible = q.takeEligible()
		}
		q.mu.Unlock()
		q.PriorityQueue.Done(req)
		q.addAgain(eligible)
	}
}

// Done implements workqueue.TypedInterface: the end of a reconcile frees a worker for the waiting
// requests the bounds now admit. The bookkeeping comes before the wrapped queue's Done, which lets
// a worker get the same request again.
func (q *fairQueue) Done(req reconcile.Request) {
	var eligible []waitingRequest
	q.mu.Lock()
	if project, ok := q.handedOut[req]; ok {
		delete(q.handedOut, req)
		q.total--
		if project != "" {
			q.busy[project]--
			if q.busy[project] == 0 {
				delete(q.busy, project)
			}
		}
		eligible = q.takeEligible()
	}
	q.mu.Unlock()
	q.PriorityQueue.Done(req)
	q.addAgain(eligible)
}

// ShutDown implements workqueue.TypedInterface: the waiting requests are dropped with the queue,
// and no longer count as waiting.
func (q *fairQueue) ShutDown() {
	q.shutDown.Do(func() {
		q.close()
		q.PriorityQueue.ShutDown()
	})
}

// ShutDownWithDrain implements workqueue.TypedInterface.
func (q *fairQueue) ShutDownWithDrain() {
	q.shutDown.Do(func() {
		q.close()
		q.PriorityQueue.ShutDownWithDrain()
	})
}

func (q *fairQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	metrics.RecordProjectWaiting(-len(q.parkedSet))
	q.parked = map[string][]*waitingRequest{}
	q.parkedSet = map[reconcile.Request]*waitingRequest{}
	q.inTransit = map[reconcile.Request]*waitingRequest{}
	q.transit = map[string]int{}
}

// park adds a request to its project's waiting requests, in the order of seq; q.mu is held.
func (q *fairQueue) park(w *waitingRequest) {
	list := q.parked[w.project]
	i, _ := slices.BinarySearchFunc(list, w.seq, func(e *waitingRequest, seq uint64) int {
		switch {
		case e.seq < seq:
			return -1
		case e.seq > seq:
			return 1
		}
		return 0
	})
	q.parked[w.project] = slices.Insert(list, i, w)
	q.parkedSet[w.req] = w
	metrics.RecordProjectWaiting(1)
}

// leaveTransit forgets a request that went back into the wrapped queue; q.mu is held.
func (q *fairQueue) leaveTransit(w *waitingRequest) {
	delete(q.inTransit, w.req)
	q.transit[w.project]--
	if q.transit[w.project] == 0 {
		delete(q.transit, w.project)
	}
}

// takeEligible takes the waiting requests the bounds admit, counting those in transit as handed
// out: first of the projects with the fewest in flight, of them the one that waits longest. Each
// one taken is in transit until a worker gets it. q.mu is held.
func (q *fairQueue) takeEligible() []waitingRequest {
	if q.closed {
		return nil
	}
	// Copies: a request in transit may change its priority under q.mu while it is added again.
	var taken []waitingRequest
	for {
		var (
			best     *waitingRequest
			bestBusy int
		)
		total := q.total + len(q.inTransit)
		for project, list := range q.parked {
			busy := q.busy[project] + q.transit[project]
			if !q.shares.admits(busy, total) {
				continue
			}
			if best == nil || busy < bestBusy || (busy == bestBusy && list[0].seq < best.seq) {
				best, bestBusy = list[0], busy
			}
		}
		if best == nil {
			return taken
		}
		if list := q.parked[best.project]; len(list) == 1 {
			delete(q.parked, best.project)
		} else {
			q.parked[best.project] = list[1:]
		}
		delete(q.parkedSet, best.req)
		metrics.RecordProjectWaiting(-1)
		q.inTransit[best.req] = best
		q.transit[best.project]++
		taken = append(taken, *best)
	}
}

// addAgain adds the taken requests to the wrapped queue, with their priority.
func (q *fairQueue) addAgain(taken []waitingRequest) {
	for _, w := range taken {
		q.AddWithOpts(priorityqueue.AddOpts{Priority: &w.priority}, w.req)
	}
}
