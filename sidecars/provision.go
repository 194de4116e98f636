package sidecars

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Keys of the StorageClass parameters the provisioner reads itself
// (external-provisioner pkg/controller/controller.go).
const (
	paramPrefix = "csi.storage.k8s.io/"
	fsTypeKey   = paramPrefix + "fstype"
	// --extra-create-metadata adds these to the parameters.
	pvcNameKey      = paramPrefix + "pvc/name"
	pvcNamespaceKey = paramPrefix + "pvc/namespace"
	pvNameKey       = paramPrefix + "pv/name"
	// The provisioner's mark in every PV's volumeAttributes.
	provisionerIDKey = "storage.kubernetes.io/csiProvisionerIdentity"
	// PV annotations and finalizer (sig-storage-lib-external-provisioner).
	annProvisionedBy       = "pv.kubernetes.io/provisioned-by"
	annDeletionSecretName  = "volume.kubernetes.io/provisioner-deletion-secret-name"
	annDeletionSecretSpace = "volume.kubernetes.io/provisioner-deletion-secret-namespace"
	annSelectedNode        = "volume.kubernetes.io/selected-node"
	pvFinalizer            = "external-provisioner.volume.kubernetes.io/finalizer"
)

// secretKinds are the StorageClass's secret templates: the
// csi.storage.k8s.io/<kind>-secret-name and -namespace keys, the older
// csi<Kind>SecretName keys where they exist, and secret-name/-namespace as
// the default of every kind.
type secretKind struct {
	name, prefixed, deprecated string
}

var (
	provisionerSecret       = secretKind{"Provisioner", "provisioner", "csiProvisionerSecret"}
	controllerPublishSecret = secretKind{"ControllerPublish", "controller-publish", "csiControllerPublishSecret"}
	nodeStageSecret         = secretKind{"NodeStage", "node-stage", "csiNodeStageSecret"}
	nodePublishSecret       = secretKind{"NodePublish", "node-publish", "csiNodePublishSecret"}
	controllerExpandSecret  = secretKind{"ControllerExpand", "controller-expand", ""}
	nodeExpandSecret        = secretKind{"NodeExpand", "node-expand", ""}
	controllerModifySecret  = secretKind{"ControllerModify", "controller-modify", ""}
	defaultSecret           = secretKind{"Default", "", ""}
)

// knownParams are the prefixed keys removePrefixedParameters accepts.
var knownParams = map[string]bool{fsTypeKey: true}

func init() {
	for _, k := range []secretKind{provisionerSecret, controllerPublishSecret, nodeStageSecret, nodePublishSecret, controllerExpandSecret, nodeExpandSecret, controllerModifySecret} {
		knownParams[paramPrefix+k.prefixed+"-secret-name"] = true
		knownParams[paramPrefix+k.prefixed+"-secret-namespace"] = true
	}
	knownParams[paramPrefix+"secret-name"] = true
	knownParams[paramPrefix+"secret-namespace"] = true
}

// provision is the provisioner's Provision for one claim: checks, the
// CreateVolume request, the call (written down before and after), the PV,
// and the binding.
func (c *Controllers) provision(ctx context.Context, claim *corev1.PersistentVolumeClaim, pod *corev1.Pod) (*Volume, error) {
	sc, err := c.class(claim)
	if err != nil {
		return nil, err
	}
	if c.cfg.Replay && c.cfg.VolumeNamePrefix == "" {
		return nil, c.inputErr(claim, fmt.Errorf("not bound in the cluster: a replay provisions it only under a name of its own, never the cluster provisioner's pvc-%s", claim.UID))
	}
	if sc.Provisioner != c.driver {
		return nil, c.inputErr(claim, fmt.Errorf("StorageClass %q names provisioner %q, not the driver %q this run talks to: no provisioner here would provision the claim", sc.Name, sc.Provisioner, c.driver))
	}
	caps, err := c.start(ctx)
	if err != nil {
		return nil, err
	}
	if !caps.has(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME) {
		return nil, c.inputErr(claim, fmt.Errorf("needs a volume from StorageClass %q, but the driver's controller (%s) does not offer CREATE_DELETE_VOLUME: give the claim a PV (spec.volumeName), or --controller-endpoint the socket of its controller", sc.Name, c.controllerText()))
	}
	p, err := c.prepareProvision(claim, sc, c.selectedNode(sc, claim, pod))
	if err != nil {
		return nil, err
	}
	lctx := withClaim(ctx, claim, p.req.Name)
	c.cfg.Trace.Note(lctx, false, fmt.Sprintf("claim %s/%s: StorageClass %s (%s), %s: CreateVolume %s", claim.Namespace, claim.Name, sc.Name, *sc.VolumeBindingMode, capacityText(p.req), p.req.Name))
	v := &Volume{Claim: claim.Namespace + "/" + claim.Name, Request: p.req}
	resp, err := c.createVolume(ctx, p.req)
	if err != nil {
		return nil, fmt.Errorf("external-provisioner: claim %s/%s: failed to provision volume with StorageClass %q: %w", claim.Namespace, claim.Name, sc.Name, err)
	}
	pv, err := c.buildPV(claim, sc, p, resp.GetVolume())
	if err != nil {
		return nil, c.abandon(ctx, p.req, resp.GetVolume().GetVolumeId(), claim, err)
	}
	v.PV, v.Handle = pv, pv.Spec.CSI.VolumeHandle
	c.mu.Lock()
	c.volumes = append(c.volumes, v)
	c.mu.Unlock()
	if err := c.bind(claim, pv); err != nil {
		return nil, err
	}
	if c.api != nil {
		if err := c.api.PVCreated(ctx, claim, pv); err != nil {
			return nil, err
		}
	}
	c.cfg.Trace.Note(lctx, false, fmt.Sprintf("PV %s created and bound to claim %s/%s: volumeHandle %s, %s, reclaimPolicy %s", pv.Name, claim.Namespace, claim.Name, v.Handle, quantityText(pv), pv.Spec.PersistentVolumeReclaimPolicy))
	if c.cfg.OnPV != nil {
		c.cfg.OnPV(claim, pv)
	}
	return v, nil
}

// prepared is prepareProvision's result.
type prepared struct {
	req          *csi.CreateVolumeRequest
	fsType       string
	csi          *corev1.CSIPersistentVolumeSource
	deleteSecret *corev1.SecretReference
}

// prepareProvision is the provisioner's prepareProvision: everything
// before CreateVolume, which calls nothing.
func (c *Controllers) prepareProvision(claim *corev1.PersistentVolumeClaim, sc *storagev1.StorageClass, selected map[string]string) (*prepared, error) {
	if claim.Spec.Selector != nil {
		return nil, c.inputErr(claim, fmt.Errorf("spec.selector: claim Selector is not supported"))
	}
	if claim.Spec.DataSource != nil || claim.Spec.DataSourceRef != nil {
		return nil, c.inputErr(claim, fmt.Errorf("spec.dataSource: volumes from a snapshot or a clone are not simulated"))
	}
	if claim.UID == "" {
		return nil, c.inputErr(claim, fmt.Errorf("metadata.uid: corrupted PVC object, it is missing UID"))
	}
	prefix := c.cfg.VolumeNamePrefix
	if prefix == "" {
		prefix = "pvc-"
	}
	pvName := prefix + string(claim.UID)
	fsType, err := fsTypeOf(sc.Parameters)
	if err != nil {
		return nil, c.inputErr(claim, err)
	}
	caps, err := c.volumeCapabilities(claim, sc, fsType)
	if err != nil {
		return nil, c.inputErr(claim, err)
	}
	size := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	req := &csi.CreateVolumeRequest{Name: pvName, VolumeCapabilities: caps, CapacityRange: &csi.CapacityRange{RequiredBytes: size.Value()}}
	if c.caps.topology() {
		if req.AccessibilityRequirements, err = c.accessibilityRequirements(claim, sc, selected); err != nil {
			return nil, fmt.Errorf("external-provisioner: claim %s/%s: error generating accessibility requirements: %w", claim.Namespace, claim.Name, err)
		}
	}
	p := &prepared{req: req, fsType: fsType, csi: &corev1.CSIPersistentVolumeSource{Driver: c.driver}}
	if err := c.secrets(claim, sc, pvName, p); err != nil {
		return nil, err
	}
	if req.Parameters, err = removePrefixed(sc.Parameters); err != nil {
		return nil, c.inputErr(claim, fmt.Errorf("failed to strip CSI Parameters of prefixed keys: %w", err))
	}
	if c.cfg.ExtraCreateMetadata {
		req.Parameters[pvcNameKey] = claim.Name
		req.Parameters[pvcNamespaceKey] = claim.Namespace
		req.Parameters[pvNameKey] = pvName
	}
	return p, nil
}

// secrets resolves the class's secret templates: the provisioner's
// (whose values go into CreateVolume and whose reference is kept for
// DeleteVolume) and the references the PV carries.
func (c *Controllers) secrets(claim *corev1.PersistentVolumeClaim, sc *storagev1.StorageClass, pvName string, p *prepared) error {
	refs := map[secretKind]**corev1.SecretReference{
		controllerPublishSecret: &p.csi.ControllerPublishSecretRef,
		nodeStageSecret:         &p.csi.NodeStageSecretRef,
		nodePublishSecret:       &p.csi.NodePublishSecretRef,
		controllerExpandSecret:  &p.csi.ControllerExpandSecretRef,
		nodeExpandSecret:        &p.csi.NodeExpandSecretRef,
	}
	for kind, dst := range refs {
		ref, err := secretReference(kind, sc.Parameters, pvName, claim)
		if err != nil {
			return c.inputErr(claim, fmt.Errorf("StorageClass %s: %w", sc.Name, err))
		}
		*dst = ref
	}
	ref, err := secretReference(provisionerSecret, sc.Parameters, pvName, claim)
	if err != nil {
		return c.inputErr(claim, fmt.Errorf("StorageClass %s: %w", sc.Name, err))
	}
	p.deleteSecret = ref
	if ref == nil {
		return nil
	}
	values, err := c.secretValues(ref)
	if err != nil {
		return c.inputErr(claim, fmt.Errorf("StorageClass %s: provisioner secret: %w", sc.Name, err))
	}
	p.req.Secrets = values
	return nil
}

// secretValues is getCredentials: the Secret's data as strings.
func (c *Controllers) secretValues(ref *corev1.SecretReference) (map[string]string, error) {
	s, ok := c.cfg.Cluster.Secret(ref.Namespace, ref.Name)
	if !ok {
		return nil, fmt.Errorf("error getting secret %s in namespace %s: secrets %q not found", ref.Name, ref.Namespace, ref.Name)
	}
	out := map[string]string{}
	for k, v := range s.Data {
		out[k] = string(v)
	}
	return out, nil
}

// secretReference is getSecretReference: the kind's templates (or the
// default ones), resolved with ${pv.name} and ${pvc.namespace} in the
// namespace, and those plus ${pvc.name} and ${pvc.annotations['k']} in the
// name, each checked as a namespace and a Secret name.
func secretReference(kind secretKind, params map[string]string, pvName string, claim *corev1.PersistentVolumeClaim) (*corev1.SecretReference, error) {
	nameT, nsT, err := secretTemplates(kind, params)
	if err != nil {
		return nil, err
	}
	// Without templates of its own, a kind takes the default ones.
	if nameT == "" && nsT == "" {
		if nameT, nsT, err = secretTemplates(defaultSecret, params); err != nil {
			return nil, err
		}
	}
	if nameT == "" && nsT == "" {
		return nil, nil
	}
	nsParams := map[string]string{"pv.name": pvName, "pvc.namespace": claim.Namespace}
	ns, err := resolveTemplate(nsT, nsParams)
	if err != nil {
		return nil, err
	}
	if len(validation.IsDNS1123Label(ns)) > 0 {
		return nil, fmt.Errorf("%q resolved to %q which is not a valid namespace name", nsT, ns)
	}
	nameParams := map[string]string{"pv.name": pvName, "pvc.namespace": claim.Namespace, "pvc.name": claim.Name}
	for k, v := range claim.Annotations {
		nameParams["pvc.annotations['"+k+"']"] = v
	}
	name, err := resolveTemplate(nameT, nameParams)
	if err != nil {
		return nil, err
	}
	if len(validation.IsDNS1123Subdomain(name)) > 0 {
		return nil, fmt.Errorf("%q resolved to %q which is not a valid secret name", nameT, name)
	}
	return &corev1.SecretReference{Name: name, Namespace: ns}, nil
}

// secretTemplates is verifyAndGetSecretNameAndNamespaceTemplate.
func secretTemplates(kind secretKind, params map[string]string) (nameT, nsT string, err error) {
	keys := [][2]string{{paramPrefix + kind.prefixed + "-secret-name", paramPrefix + kind.prefixed + "-secret-namespace"}}
	if kind.prefixed == "" {
		keys[0] = [2]string{paramPrefix + "secret-name", paramPrefix + "secret-namespace"}
	}
	if kind.deprecated != "" {
		keys = append(keys, [2]string{kind.deprecated + "Name", kind.deprecated + "Namespace"})
	}
	names, spaces := 0, 0
	for _, k := range keys {
		if v, ok := params[k[0]]; ok {
			nameT, names = v, names+1
		}
		if v, ok := params[k[1]]; ok {
			nsT, spaces = v, spaces+1
		}
	}
	switch {
	case names > 1 || spaces > 1:
		return "", "", fmt.Errorf("%s secrets specified in parameters with both \"csi\" and %q keys", kind.name, paramPrefix)
	case names != spaces:
		return "", "", fmt.Errorf("either name and namespace for %s secrets specified, Both must be specified", kind.name)
	case names == 1 && (nameT == "" || nsT == ""):
		return "", "", fmt.Errorf("%s secrets specified in parameters but value of either namespace or name is empty", kind.name)
	}
	return nameT, nsT, nil
}

// resolveTemplate expands ${token}s; an unknown token is an error.
func resolveTemplate(t string, params map[string]string) (string, error) {
	var missing []string
	out := os.Expand(t, func(k string) string {
		v, ok := params[k]
		if !ok {
			missing = append(missing, k)
		}
		return v
	})
	if len(missing) > 0 {
		sort.Strings(missing)
		return "", fmt.Errorf("error resolving value %q: invalid tokens: %q", t, missing)
	}
	return out, nil
}

// fsTypeOf is the fsType of the class: csi.storage.k8s.io/fstype, or the
// older fstype key in any case; not both.
func fsTypeOf(params map[string]string) (string, error) {
	found, fsType := 0, ""
	for k, v := range params {
		if strings.ToLower(k) == "fstype" || k == fsTypeKey {
			fsType = v
			found++
		}
	}
	if found > 1 {
		return "", fmt.Errorf("parameters: fstype specified in parameters with both \"fstype\" and %q keys", fsTypeKey)
	}
	return fsType, nil
}

// removePrefixed is removePrefixedParameters: the provisioner's own keys
// go, an unknown key of its prefix is an error, the rest pass through.
func removePrefixed(params map[string]string) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range params {
		if !strings.HasPrefix(k, paramPrefix) {
			out[k] = v
			continue
		}
		if !knownParams[k] {
			return map[string]string{}, fmt.Errorf("found unknown parameter key %q with reserved namespace %s", k, paramPrefix)
		}
	}
	return out, nil
}

// volumeCapabilities is getVolumeCapabilities: one capability per access
// mode of the claim, each mapped alone.
func (c *Controllers) volumeCapabilities(claim *corev1.PersistentVolumeClaim, sc *storagev1.StorageClass, fsType string) ([]*csi.VolumeCapability, error) {
	if len(claim.Spec.AccessModes) == 0 {
		return nil, fmt.Errorf("spec.accessModes: Required value: at least 1 access mode is required")
	}
	snmw := c.caps.has(csi.ControllerServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER)
	block := claim.Spec.VolumeMode != nil && *claim.Spec.VolumeMode == corev1.PersistentVolumeBlock
	caps := make([]*csi.VolumeCapability, 0, len(claim.Spec.AccessModes))
	for _, m := range claim.Spec.AccessModes {
		mode, err := csiAccessMode([]corev1.PersistentVolumeAccessMode{m}, snmw)
		if err != nil {
			return nil, err
		}
		caps = append(caps, capability(block, fsType, sc.MountOptions, mode))
	}
	return caps, nil
}

func capability(block bool, fsType string, mountFlags []string, mode csi.VolumeCapability_AccessMode_Mode) *csi.VolumeCapability {
	vc := &csi.VolumeCapability{AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode}}
	if block {
		vc.AccessType = &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}
	} else {
		vc.AccessType = &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: fsType, MountFlags: mountFlags}}
	}
	return vc
}

// csiAccessMode is csi-lib-utils' accessmodes.ToCSIAccessMode, which both
// sidecars use.
func csiAccessMode(modes []corev1.PersistentVolumeAccessMode, snmw bool) (csi.VolumeCapability_AccessMode_Mode, error) {
	m := map[corev1.PersistentVolumeAccessMode]bool{}
	for _, x := range modes {
		m[x] = true
	}
	switch {
	case m[corev1.ReadWriteOncePod] && len(m) > 1:
		return 0, fmt.Errorf("%s does not support use of ReadWriteOncePod with other access modes on the same PersistentVolume", "Kubernetes") // the sidecars' words
	case m[corev1.ReadWriteOncePod] && snmw:
		return csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER, nil
	case m[corev1.ReadWriteOncePod]:
		return csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, nil
	case m[corev1.ReadWriteMany]:
		return csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER, nil
	case m[corev1.ReadOnlyMany] && m[corev1.ReadWriteOnce]:
		return 0, fmt.Errorf("CSI does not support ReadOnlyMany and ReadWriteOnce on the same PersistentVolume")
	case m[corev1.ReadOnlyMany]:
		return csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY, nil
	case m[corev1.ReadWriteOnce] && snmw:
		return csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER, nil
	case m[corev1.ReadWriteOnce]:
		return csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, nil
	}
	return 0, fmt.Errorf("unsupported AccessMode combination: %+v", modes)
}

func capacityText(req *csi.CreateVolumeRequest) string {
	return "required_bytes " + resource.NewQuantity(req.GetCapacityRange().GetRequiredBytes(), resource.BinarySI).String()
}

func quantityText(pv *corev1.PersistentVolume) string {
	q := pv.Spec.Capacity[corev1.ResourceStorage]
	return "capacity " + q.String()
}
