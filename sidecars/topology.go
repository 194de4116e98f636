package sidecars

import (
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// segment is one key=value of a topology; a term is a topology with its
// segments sorted by key.
type segment struct{ key, value string }
type term []segment

func termOf(m map[string]string) term {
	t := make(term, 0, len(m))
	for k, v := range m {
		t = append(t, segment{k, v})
	}
	t.sort()
	return t
}

func (t term) sort() {
	slices.SortFunc(t, func(a, b segment) int {
		if r := strings.Compare(a.key, b.key); r != 0 {
			return r
		}
		return strings.Compare(a.value, b.value)
	})
}

// compare orders terms by length, then segment by segment.
func (t term) compare(o term) int {
	if len(t) != len(o) {
		return len(t) - len(o)
	}
	for i := range t {
		if r := strings.Compare(t[i].key, o[i].key); r != 0 {
			return r
		}
		if r := strings.Compare(t[i].value, o[i].value); r != 0 {
			return r
		}
	}
	return 0
}

// subset tells whether every segment of t is in o (both sorted).
func (t term) subset(o term) bool {
	if len(t) == 0 {
		return true
	}
	j := 0
	for _, s := range o {
		if t[j].key != s.key {
			continue
		}
		if t[j].value != s.value {
			return false
		}
		j++
		if j == len(t) {
			return true
		}
	}
	return false
}

// accessibilityRequirements is GenerateAccessibilityRequirements without
// --strict-topology and with --immediate-topology (the defaults), for a
// cluster of one node, this one: the requisite topologies are the class's
// allowedTopologies, else every node's topology (here, the node's
// NodeGetInfo accessible_topology); sorted and deduplicated. The
// preferred ones are the requisite ones rotated: to the selected node's
// topology under WaitForFirstConsumer, by a hash of the claim's name for
// Immediate binding. selected is nil for Immediate binding.
func (c *Controllers) accessibilityRequirements(claim *corev1.PersistentVolumeClaim, sc *storagev1.StorageClass, selected map[string]string) (*csi.TopologyRequirement, error) {
	var selectedTerm term
	if selected != nil {
		if len(c.reg.CSINodeDriver.TopologyKeys) == 0 {
			return nil, fmt.Errorf("no topology key found on CSINode %s", c.cfg.NodeName)
		}
		selectedTerm = termOf(selected)
	}
	var requisite []term
	if len(sc.AllowedTopologies) > 0 {
		requisite = flatten(sc.AllowedTopologies)
	} else {
		if len(c.reg.Topology) == 0 {
			return nil, errors.New("no available topology found")
		}
		requisite = []term{termOf(c.reg.Topology)}
	}
	slices.SortFunc(requisite, term.compare)
	requisite = slices.CompactFunc(requisite, func(a, b term) bool { return a.compare(b) == 0 })
	req := &csi.TopologyRequirement{Requisite: toCSI(requisite)}
	var preferred []term
	if selected == nil {
		hash, index := claimNameHash(claim.Name)
		i := (hash + index) % uint32(len(requisite))
		preferred = append(slices.Clone(requisite[i:]), requisite[:i]...)
	} else {
		for i, t := range requisite {
			if t.subset(selectedTerm) {
				preferred = append(slices.Clone(requisite[i:]), requisite[:i]...)
				break
			}
		}
		if preferred == nil {
			return nil, fmt.Errorf("topology %v from selected node %q is not in requisite: %v", selected, c.cfg.NodeName, toCSI(requisite))
		}
	}
	req.Preferred = toCSI(preferred)
	return req, nil
}

// flatten turns allowedTopologies into terms: the terms are ORed, the
// expressions of a term ANDed, the values of an expression ORed.
func flatten(allowed []corev1.TopologySelectorTerm) []term {
	var out []term
	for _, st := range allowed {
		var terms []term
		for _, e := range st.MatchLabelExpressions {
			var next []term
			for _, v := range e.Values {
				if len(terms) == 0 {
					next = append(next, term{{e.Key, v}})
					continue
				}
				for _, t := range terms {
					next = append(next, append(slices.Clone(t), segment{e.Key, v}))
				}
			}
			terms = next
		}
		out = append(out, terms...)
	}
	for _, t := range out {
		t.sort()
	}
	return out
}

func toCSI(terms []term) []*csi.Topology {
	out := make([]*csi.Topology, 0, len(terms))
	for _, t := range terms {
		seg := make(map[string]string, len(t))
		for _, s := range t {
			seg[s.key] = s.value
		}
		out = append(out, &csi.Topology{Segments: seg})
	}
	return out
}

// claimNameHash is getPVCNameHashAndIndexOffset: a StatefulSet-like name
// <claim>-<set>-<n> hashes only <set> and is offset by n, so that the
// members spread over the topologies.
func claimNameHash(name string) (hash, index uint32) {
	s := name
	if dash := strings.LastIndexByte(name, '-'); dash != -1 {
		if id, err := strconv.ParseUint(name[dash+1:], 10, 32); err == nil {
			index = uint32(id)
			s = name[:dash]
			if d := strings.LastIndexByte(s, '-'); d != -1 {
				s = s[d+1:]
			}
		}
	}
	h := fnv.New32()
	h.Write([]byte(s))
	return h.Sum32(), index
}

// nodeAffinity is GenerateVolumeNodeAffinity: one node selector term per
// accessible topology, one In expression per segment (sorted by key here,
// where the sidecar takes Go's map order).
func nodeAffinity(topologies []*csi.Topology) *corev1.VolumeNodeAffinity {
	var terms []corev1.NodeSelectorTerm
	for _, t := range topologies {
		if len(t.GetSegments()) == 0 {
			continue
		}
		keys := make([]string, 0, len(t.GetSegments()))
		for k := range t.GetSegments() {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var exprs []corev1.NodeSelectorRequirement
		for _, k := range keys {
			exprs = append(exprs, corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{t.GetSegments()[k]}})
		}
		terms = append(terms, corev1.NodeSelectorTerm{MatchExpressions: exprs})
	}
	if len(terms) == 0 {
		return nil
	}
	return &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: terms}}
}
