package extension

import (
	"strings"
	"sync"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/metrics"
)

// One process reconciles the shoots of every project of the seed with a fixed number of workers.
// A project whose reconciles take long (applies that wait for the applied timeout because its
// shoots' API servers do not answer) could otherwise hold every worker, and the other projects'
// shoots would wait for minutes. The fair queue hands a worker the next request only while the
// request's project has fewer than its share of the workers busy; further requests of the project
// wait, without a worker, until one of the project's reconciles ends.

// projectShare is the number of workers the shoots of one project may occupy at once: percent of
// workers, rounded up, at least one.
func projectShare(workers, percent int) int {
	return max(1, (workers*percent+99)/100)
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

// fairQueue wraps the controller's queue so that the requests of one project take at most limit
// workers at once.
type fairQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	limit int

	mu sync.Mutex
	// busy counts the requests of a project handed to workers and not done yet.
	busy map[string]int
	// handedOut is the project of each request handed to a worker.
	handedOut map[reconcile.Request]string
	// waiting are the requests of a project that had no free share when they were next, in order,
	// with their priority; waitingSet holds them for deduplication.
	waiting    map[string][]waitingRequest
	waitingSet map[reconcile.Request]bool

	// shutDown makes ShutDown idempotent; the wrapped queue panics on a second one.
	shutDown sync.Once
}

type waitingRequest struct {
	req      reconcile.Request
	priority int
}

// newFairQueue returns the queue constructor of a controller with workers workers, each project
// getting percent of them. It wraps controller-runtime's priority queue, the default.
func newFairQueue(workers, percent int) func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return func(name string, rateLimiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		inner := priorityqueue.New(name, func(o *priorityqueue.Opts[reconcile.Request]) { o.RateLimiter = rateLimiter })
		return wrapFair(inner, projectShare(workers, percent))
	}
}

func wrapFair(inner priorityqueue.PriorityQueue[reconcile.Request], limit int) *fairQueue {
	return &fairQueue{
		PriorityQueue: inner,
		limit:         limit,
		busy:          map[string]int{},
		handedOut:     map[reconcile.Request]string{},
		waiting:       map[string][]waitingRequest{},
		waitingSet:    map[reconcile.Request]bool{},
	}
}

// Get implements workqueue.TypedInterface.
func (q *fairQueue) Get() (reconcile.Request, bool) {
	req, _, shutdown := q.GetWithPriority()
	return req, shutdown
}

// GetWithPriority hands out the next request whose project has a free share. A request of a
// project without one is taken from the queue (done there) and waits here for the project's next
// Done.
func (q *fairQueue) GetWithPriority() (reconcile.Request, int, bool) {
	for {
		req, priority, shutdown := q.PriorityQueue.GetWithPriority()
		if shutdown {
			return req, priority, true
		}
		project := projectOfRequest(req)
		q.mu.Lock()
		if project != "" && (q.waitingSet[req] || q.busy[project] >= q.limit) {
			if !q.waitingSet[req] {
				q.waitingSet[req] = true
				q.waiting[project] = append(q.waiting[project], waitingRequest{req: req, priority: priority})
				metrics.RecordProjectWaiting(1)
			}
			q.mu.Unlock()
			q.PriorityQueue.Done(req)
			continue
		}
		if project != "" {
			q.busy[project]++
			q.handedOut[req] = project
		}
		q.mu.Unlock()
		return req, priority, false
	}
}

// Done implements workqueue.TypedInterface: the end of a request's reconcile frees its project's
// share for the project's next waiting request.
func (q *fairQueue) Done(req reconcile.Request) {
	q.PriorityQueue.Done(req)
	q.mu.Lock()
	project, ok := q.handedOut[req]
	if !ok {
		q.mu.Unlock()
		return
	}
	delete(q.handedOut, req)
	q.busy[project]--
	if q.busy[project] == 0 {
		delete(q.busy, project)
	}
	next, found := q.popWaiting(project)
	q.mu.Unlock()
	if found {
		q.AddWithOpts(priorityqueue.AddOpts{Priority: &next.priority}, next.req)
	}
}

// ShutDown implements workqueue.TypedInterface: the waiting requests are dropped with the queue,
// and no longer count as waiting.
func (q *fairQueue) ShutDown() {
	q.shutDown.Do(func() {
		q.dropWaiting()
		q.PriorityQueue.ShutDown()
	})
}

// ShutDownWithDrain implements workqueue.TypedInterface.
func (q *fairQueue) ShutDownWithDrain() {
	q.shutDown.Do(func() {
		q.dropWaiting()
		q.PriorityQueue.ShutDownWithDrain()
	})
}

func (q *fairQueue) dropWaiting() {
	q.mu.Lock()
	defer q.mu.Unlock()
	metrics.RecordProjectWaiting(-len(q.waitingSet))
	q.waiting = map[string][]waitingRequest{}
	q.waitingSet = map[reconcile.Request]bool{}
}

// popWaiting takes the first waiting request of the project; q.mu is held.
func (q *fairQueue) popWaiting(project string) (waitingRequest, bool) {
	list := q.waiting[project]
	if len(list) == 0 {
		return waitingRequest{}, false
	}
	next := list[0]
	if len(list) == 1 {
		delete(q.waiting, project)
	} else {
		q.waiting[project] = list[1:]
	}
	delete(q.waitingSet, next.req)
	metrics.RecordProjectWaiting(-1)
	return next, true
}
