package manifests

import (
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The kubelet sends a pod's SELinux file label to the driver as one mount
// option, context="<user>:<role>:<type>:<level>" (AddSELinuxMountOption,
// Go %q quoting), after the PV's spec.mountOptions. The driver joins them
// with commas for mount(8) or mount(2), and both libmount and the kernel's
// SELinux option parser split that string on commas outside double quotes
// and know no backslash escape. The API server checks neither
// seLinuxOptions nor mountOptions, so a quote in a label field, or an
// unbalanced quote in a PV mount option, would make the driver mount with
// options nobody wrote (`user: 'x",suid,y="'` adds "suid"). The simulator
// runs drivers on a real node, so it refuses such input: its own rule,
// not the API server's.

var (
	// seLinuxIdent is a policy identifier (user, role, type).
	seLinuxIdent = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
	// seLinuxLevel is an MLS/MCS level or range: s0, s0:c1,c2,
	// s0-s0:c0.c1023.
	seLinuxLevel = regexp.MustCompile(`^[A-Za-z0-9_.,:-]+$`)
)

// SELinuxOptionsErrors checks one seLinuxOptions: user, role and type are
// policy identifiers (letters, digits, '_', '.', '-'), the level an MLS
// level (the same and ',' and ':'); empty fields are fine.
func SELinuxOptionsErrors(o *corev1.SELinuxOptions, fld *field.Path) field.ErrorList {
	if o == nil {
		return nil
	}
	var errs field.ErrorList
	check := func(name, v string, re *regexp.Regexp, what string) {
		if v != "" && !re.MatchString(v) {
			errs = append(errs, field.Invalid(fld.Child(name), v, "must consist of "+what+
				": the kubelet sends the label to the driver inside the mount option context=\"...\""))
		}
	}
	check("user", o.User, seLinuxIdent, "letters, digits, '_', '.' or '-'")
	check("role", o.Role, seLinuxIdent, "letters, digits, '_', '.' or '-'")
	check("type", o.Type, seLinuxIdent, "letters, digits, '_', '.' or '-'")
	check("level", o.Level, seLinuxLevel, "letters, digits, '_', '.', '-', ',' or ':'")
	return errs
}

// podSELinuxErrs checks the pod's seLinuxOptions and every container's.
func podSELinuxErrs(p *corev1.Pod) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if sc := p.Spec.SecurityContext; sc != nil {
		errs = append(errs, SELinuxOptionsErrors(sc.SELinuxOptions, spec.Child("securityContext", "seLinuxOptions"))...)
	}
	containers := func(list string, n int, sc func(int) *corev1.SecurityContext) {
		for i := 0; i < n; i++ {
			if c := sc(i); c != nil {
				errs = append(errs, SELinuxOptionsErrors(c.SELinuxOptions, spec.Child(list).Index(i).Child("securityContext", "seLinuxOptions"))...)
			}
		}
	}
	containers("initContainers", len(p.Spec.InitContainers), func(i int) *corev1.SecurityContext { return p.Spec.InitContainers[i].SecurityContext })
	containers("containers", len(p.Spec.Containers), func(i int) *corev1.SecurityContext { return p.Spec.Containers[i].SecurityContext })
	containers("ephemeralContainers", len(p.Spec.EphemeralContainers), func(i int) *corev1.SecurityContext {
		return p.Spec.EphemeralContainers[i].SecurityContext
	})
	return errs
}

// mountOptionErrs refuses a PV mount option with an odd number of double
// quotes: the quote would stay open across the commas that follow, and
// swallow the options after it, the kubelet's context= among them.
func mountOptionErrs(opts []string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, o := range opts {
		if strings.Count(o, `"`)%2 != 0 {
			errs = append(errs, field.Invalid(fld.Index(i), o, "an unbalanced '\"' would join it with the mount options after it"))
		}
	}
	return errs
}

// SplitMountOptions splits a comma-joined mount option string the way
// libmount and the kernel's SELinux option parser do: on commas outside
// double quotes, with no escape character. Fuzz tests check the kubelet's
// option list against it.
func SplitMountOptions(s string) []string {
	var out []string
	quoted, start := false, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			quoted = !quoted
		case ',':
			if !quoted {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}
