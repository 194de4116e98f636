package tokens

import (
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// RequestUID is what the API server does with a TokenRequest's
// metadata.uid (docs/kubelet.md §4.2). Which one applies is the
// release's business (node.Release.TokenRequestUID); the zero value is
// the newest API server's.
type RequestUID int

const (
	// RequestUIDValidated (1.34 on, TokenRequestServiceAccountUIDValidation
	// on, its default): the UID is kept, an empty one becomes the
	// ServiceAccount's, and another one is refused with a Conflict.
	RequestUIDValidated RequestUID = iota
	// RequestUIDWarned (1.34 on with the gate off): as validated, but
	// another UID gets a warning instead of the Conflict.
	RequestUIDWarned
	// RequestUIDWiped (up to 1.33): the API server wipes the system fields
	// of a subresource's request (WipeObjectMetaSystemFields): the UID is
	// neither checked nor filled, and the response carries none.
	RequestUIDWiped
)

// String names the rule as the API server's code has it.
func (u RequestUID) String() string {
	switch u {
	case RequestUIDValidated:
		return "validated"
	case RequestUIDWarned:
		return "warned"
	case RequestUIDWiped:
		return "wiped"
	}
	return fmt.Sprintf("RequestUID(%d)", int(u))
}

// applyRequestUID checks and fills out.UID by the rule, against the
// ServiceAccount's UID (TokenREST.Create).
func (i *Issuer) applyRequestUID(out *authenticationv1.TokenRequest, serviceAccount string, saUID types.UID) error {
	mismatch := fmt.Sprintf("the UID in the token request (%s) does not match the UID of the service account (%s)", out.UID, saUID)
	switch i.cfg.RequestUID {
	case RequestUIDWiped:
		out.UID = ""
		return nil
	case RequestUIDWarned:
		if out.UID != "" && out.UID != saUID && i.cfg.Warn != nil {
			i.cfg.Warn(mismatch + " but TokenRequestServiceAccountUIDValidation is not enabled. In the future, this will return a conflict error")
		}
	default:
		if out.UID != "" && out.UID != saUID {
			return apierrors.NewConflict(schema.GroupResource{Group: tokenRequestGK.Group, Resource: tokenRequestGK.Kind}, serviceAccount, fmt.Errorf("%s", mismatch))
		}
	}
	if out.UID == "" {
		out.UID = saUID
	}
	return nil
}
