package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"
)

// Request is one API request from the API server's audit log.
type Request struct {
	Time        time.Time `json:"time"`
	User        string    `json:"user"`
	Verb        string    `json:"verb"`
	APIGroup    string    `json:"api_group,omitempty"`
	APIVersion  string    `json:"api_version,omitempty"`
	Resource    string    `json:"resource"`
	Subresource string    `json:"subresource,omitempty"`
	Namespace   string    `json:"namespace,omitempty"`
	Name        string    `json:"name,omitempty"`
	Code        int       `json:"code"`
	URI         string    `json:"uri"`
}

// Object is resource[/subresource] namespace/name, as the trace prints it.
func (r Request) Object() string {
	res := r.Resource
	if r.Subresource != "" {
		res += "/" + r.Subresource
	}
	if r.APIGroup != "" {
		res += "." + r.APIGroup
	}
	switch {
	case r.Namespace != "" && r.Name != "":
		return res + " " + r.Namespace + "/" + r.Name
	case r.Name != "":
		return res + " " + r.Name
	case r.Namespace != "":
		return res + " -n " + r.Namespace
	}
	return res
}

// Path is the object's path on the API server.
func (r Request) Path() string {
	p := "/api/" + r.APIVersion
	if r.APIGroup != "" {
		p = "/apis/" + r.APIGroup + "/" + r.APIVersion
	}
	if r.Namespace != "" {
		p += "/namespaces/" + url.PathEscape(r.Namespace)
	}
	return p + "/" + r.Resource + "/" + url.PathEscape(r.Name)
}

func (r Request) String() string {
	return fmt.Sprintf("%s %s → %d", r.Verb, r.Object(), r.Code)
}

// Changes tells whether the request wrote something that stayed (a
// TokenReview or an access review is a question, stored nowhere).
func (r Request) Changes() bool {
	if strings.HasSuffix(r.Resource, "reviews") {
		return false
	}
	switch r.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return r.Code >= 200 && r.Code < 300
	}
	return false
}

// auditEvent is the part of an audit.k8s.io/v1 Event read here.
type auditEvent struct {
	Stage      string `json:"stage"`
	RequestURI string `json:"requestURI"`
	Verb       string `json:"verb"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		APIGroup    string `json:"apiGroup"`
		APIVersion  string `json:"apiVersion"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	StageTimestamp time.Time `json:"stageTimestamp"`
}

// parseAudit reads one line of the audit log; ok is false for lines that
// are not a finished request (or not JSON). A watch counts when its
// response starts: it completes only when it is closed, after the trace
// (secrets-store, for one, watches its classes, status objects and pods).
func parseAudit(line []byte) (Request, bool) {
	var e auditEvent
	if json.Unmarshal(line, &e) != nil || !requestLogged(e.Verb, e.Stage) {
		return Request{}, false
	}
	r := Request{Time: e.StageTimestamp, User: e.User.Username, Verb: e.Verb, URI: e.RequestURI}
	if e.ObjectRef != nil {
		r.Resource, r.Namespace, r.Name = e.ObjectRef.Resource, e.ObjectRef.Namespace, e.ObjectRef.Name
		r.APIGroup, r.Subresource, r.APIVersion = e.ObjectRef.APIGroup, e.ObjectRef.Subresource, e.ObjectRef.APIVersion
	} else {
		r.Resource = strings.SplitN(e.RequestURI, "?", 2)[0]
	}
	if e.ResponseStatus != nil {
		r.Code = e.ResponseStatus.Code
	}
	return r, true
}

// requestLogged tells the one audit stage that stands for a request: the
// response's start for a watch, its end (or a panic) for the rest.
func requestLogged(verb, stage string) bool {
	if verb == "watch" {
		return stage == "ResponseStarted"
	}
	return stage == "ResponseComplete" || stage == "Panic"
}

// AuditTail follows the audit log and hands the requests of one user to a
// callback as they are logged (the API server writes an entry before it
// answers: --audit-log-mode=blocking).
type AuditTail struct {
	path, user string
	on         func(Request)
	mu         sync.Mutex
	offset     int64
	partial    []byte
	seen       []Request
}

// TailAudit starts following the control plane's audit log for user's
// requests until ctx ends; on receives each one.
func (cp *ControlPlane) TailAudit(ctx context.Context, user string, on func(Request)) *AuditTail {
	t := &AuditTail{path: cp.AuditLog, user: user, on: on}
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				t.Poll()
			}
		}
	}()
	return t
}

// Poll reads what was logged since the last poll.
func (t *AuditTail) Poll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	f, err := os.Open(t.path)
	if err != nil {
		return
	}
	defer f.Close()
	if _, err := f.Seek(t.offset, io.SeekStart); err != nil {
		return
	}
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		t.offset += int64(len(line))
		if err != nil {
			t.partial = append(t.partial, line...)
			return
		}
		if len(t.partial) > 0 {
			line = append(t.partial, line...)
			t.partial = nil
		}
		req, ok := parseAudit(line)
		if !ok || req.User != t.user {
			continue
		}
		t.seen = append(t.seen, req)
		if t.on != nil {
			t.on(req)
		}
	}
}

// Requests are the user's requests seen so far.
func (t *AuditTail) Requests() []Request {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Request(nil), t.seen...)
}
