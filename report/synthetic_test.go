package report

import (
	"fmt"
	"sort"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
)

// synthetic is a made-up node run: registration (2 calls), then pods
// started 2 ms apart, each with one volume mounted (capabilities, stage,
// capabilities, publish) and later torn down (unpublish, unstage): 6 calls
// a pod, the unstage labelled with no pod as the kubelet's. Pod 7's
// publish fails with Internal and pod 13's stage times out.
func synthetic(pods int) []csiclient.Call {
	calls := []csiclient.Call{
		{Start: t0, Duration: 2 * time.Millisecond, Method: "GetPluginInfo",
			Labels: csiclient.Labels{Component: "registrar", Operation: "GetDriverName"}},
		{Start: t0.Add(3 * time.Millisecond), Duration: 1 * time.Millisecond, Method: "NodeGetInfo",
			Labels: csiclient.Labels{Component: "kubelet", Operation: "RegisterPlugin"}},
	}
	for i := range pods {
		pod, vol := fmt.Sprintf("default/app-%03d", i), fmt.Sprintf("pv-%03d", i)
		at := t0.Add(5*time.Millisecond + time.Duration(i)*2*time.Millisecond)
		steps := []struct {
			op, method string
			d          time.Duration
		}{
			{"MountDevice", "NodeGetCapabilities", 300 * time.Microsecond},
			{"MountDevice", "NodeStageVolume", time.Duration(20+(i*7)%60) * time.Millisecond},
			{"SetUp", "NodeGetCapabilities", 300 * time.Microsecond},
			{"SetUp", "NodePublishVolume", time.Duration(200+(i*13)%150) * time.Millisecond},
			{"TearDown", "NodeUnpublishVolume", 5 * time.Millisecond},
			{"UnmountDevice", "NodeUnstageVolume", 8 * time.Millisecond},
		}
		for j, s := range steps {
			if j == 4 {
				at = at.Add(500 * time.Millisecond) // the pod runs
			}
			c := csiclient.Call{Start: at, Duration: s.d, Method: s.method,
				Labels: csiclient.Labels{Component: "kubelet", Operation: s.op, Volume: vol, Pod: pod}}
			if s.op == "UnmountDevice" {
				c.Labels.Pod = "" // as the kubelet's: a device is unstaged for no pod
			}
			switch {
			case i == 7 && s.method == "NodePublishVolume":
				c.Code, c.Err = codes.Internal, status.Error(codes.Internal, "mount failed")
			case i == 13 && s.method == "NodeStageVolume":
				c.Code, c.Err, c.TimedOut = codes.DeadlineExceeded, status.Error(codes.DeadlineExceeded, "context deadline exceeded"), true
			}
			calls = append(calls, c)
			at = at.Add(s.d + 100*time.Microsecond)
		}
	}
	return calls
}

// play hands calls to sinks as a csiclient.Trace would: each start to the
// BeginSinks in start order, each call when it ends, numbered in that
// order.
func play(calls []csiclient.Call, sinks ...csiclient.Sink) {
	type ev struct {
		t     time.Time
		begin bool
		c     csiclient.Call
	}
	evs := make([]ev, 0, 2*len(calls))
	for _, c := range calls {
		evs = append(evs, ev{c.Start, true, c}, ev{c.Start.Add(c.Duration), false, c})
	}
	sort.SliceStable(evs, func(i, j int) bool {
		if !evs[i].t.Equal(evs[j].t) {
			return evs[i].t.Before(evs[j].t)
		}
		return !evs[i].begin && evs[j].begin
	})
	seq := 0
	for _, e := range evs {
		for _, s := range sinks {
			if b, ok := s.(csiclient.BeginSink); ok && e.begin {
				b.Begin(e.c)
			}
		}
		if e.begin {
			continue
		}
		seq++
		e.c.Seq = seq
		for _, s := range sinks {
			s.Call(e.c)
		}
	}
}
