package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/admission/remote"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/cluster"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/conformance"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/admission"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/controlplane"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/replay"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens/tokencmd"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/validate"
)

// The flags of each option group, registered here so that the options
// themselves (session/) need no flag package.

// addProvisionFlag is --provision-unbound, for the commands that run the
// sidecars (run, load, plan).
func addProvisionFlag(l *replay.Options, fs *pflag.FlagSet) {
	fs.BoolVar(&l.ProvisionUnbound, "provision-unbound", false, "with --pod: provision a claim the cluster has not bound yet, as a volume of the replay's own (named csi-kubelet-sim-<run id>-<claim uid>, never the cluster provisioner's pvc-<uid>), deleted at the end; without it such a claim is refused")
}

// addReleaseFlags registers --kubelet-version (the supported releases
// follow its usage, or stand at its %s) and, with a usage,
// --feature-gates.
func addReleaseFlags(f *session.ReleaseFlags, fs *pflag.FlagSet, versionUsage, gatesUsage string) {
	if strings.Contains(versionUsage, "%s") {
		versionUsage = fmt.Sprintf(versionUsage, node.SupportedReleases())
	} else {
		versionUsage += ", " + node.SupportedReleases()
	}
	fs.StringVar(&f.KubeletVersion, "kubelet-version", node.DefaultVersion.String(), versionUsage)
	if gatesUsage != "" {
		fs.StringVar(&f.FeatureGates, "feature-gates", "", gatesUsage)
	}
}

func addAdmissionFlags(o *admission.Options, fs *pflag.FlagSet) {
	fs.StringArrayVar(&o.WebhookServices, "webhook-service", nil, "where a webhook's clientConfig.service listens: namespace/name[:port]=host:port (repeatable)")
	fs.StringVar(&o.As, "as", "", "the user in the webhooks' AdmissionReview (default "+remote.DefaultUser.Name+", kubeadm's admin)")
	fs.StringArrayVar(&o.AsGroups, "as-group", nil, "a group of that user (repeatable; default with --as: system:authenticated)")
	fs.BoolVar(&o.WebhookDryRun, "webhook-dry-run", false, "send the AdmissionReviews with dryRun: true, as kubectl --dry-run=server")
}

func addApiserverFlags(o *controlplane.Options, fs *pflag.FlagSet) {
	fs.BoolVar(&o.Enabled, "apiserver", false, "run a real kube-apiserver (with etcd) on loopback for the run: the input is created through its API, tokens come from its TokenRequest API, the driver gets a kubeconfig, and its API requests are traced (needs the helper "+cluster.HelperName+" and etcd)")
	fs.StringVar(&o.DriverKubeconfig, "driver-kubeconfig", "", "with --apiserver, write the driver's kubeconfig here (default: in the run's control plane dir; the path is printed); start the driver with KUBECONFIG set to it")
	fs.StringVar(&o.DriverServiceAccount, "driver-service-account", "", "with --apiserver, the driver's ServiceAccount (NAMESPACE/NAME; default: the one the input's RBAC binds, else cluster-admin)")
	fs.DurationVar(&o.DriverWait, "driver-wait", time.Minute, "with --apiserver, how long to wait for the driver's socket after the kubeconfig is written (start the driver then)")
}

func addCleanupFlags(co *session.CleanupOptions, fs *pflag.FlagSet) {
	o := &co.CommonOptions
	addRootDirFlag(&o.RootDirFlag, fs, "the root dir of the interrupted run (required)")
	addEndpointFlag(&co.EndpointFlag, fs, session.EndpointUsage)
	fs.StringVar(&co.ControllerEndpoint, "controller-endpoint", "", "the driver's controller socket, for the volumes and attachments the run's provisioner and attacher left (default: --endpoint)")
	fs.StringVar(&o.NodeName, "node-name", "", "the node's name (default: the host name)")
	addReleaseFlags(&o.ReleaseFlags, fs, "the kubelet release to reproduce", "")
	addOutputFlag(&o.OutputFlag, fs, "text or json (one object per line)")
	fs.BoolVar(&o.ShowSecrets, "show-secrets", false, "print secrets and tokens instead of redacting them")
	addTimeoutFlag(&o.TimeoutFlag, fs, node.DefaultTimeout, "timeout of each kubelet operation")
	fs.CountVarP(&o.Verbose, "verbose", "v", "more detail")
	fs.BoolVar(&o.Force, "force", false, "after the driver refused to unpublish, unstage, detach or delete (NotFound: it no longer knows the volume), unmount and remove the targets and staging paths the journal recorded, and drop the controller records, each said on a line of its own")
}

func addCommonFlags(o *session.CommonOptions, fs *pflag.FlagSet) {
	addFileFlags(fs, &o.Filenames, &o.Recursive, "manifests: a file, a directory or - for stdin (repeatable; files may also be given as arguments)")
	addRootDirFlag(&o.RootDirFlag, fs, "the kubelet root dir (default: a fresh temp dir, removed afterwards)")
	fs.StringVar(&o.NodeName, "node-name", "", "the node's name (default: the host name)")
	addReleaseFlags(&o.ReleaseFlags, fs, "the kubelet release to reproduce", "kubelet feature gates over the version's defaults, A=true,B=false")
	addSelinuxFlagFlags(&o.SELinux, fs)
	fs.StringVar(&o.SELinuxLevel, "selinux-level", "", "MCS level for seLinuxOptions without one (default: a random level, as the kubelet allocates)")
	addOutputFlag(&o.OutputFlag, fs, "text or json (one object per line)")
	fs.BoolVar(&o.ShowSecrets, "show-secrets", false, "print secrets and tokens instead of redacting them")
	addTimeoutFlag(&o.TimeoutFlag, fs, node.DefaultTimeout, "timeout of each kubelet operation, as the kubelet's csiTimeout")
	fs.CountVarP(&o.Verbose, "verbose", "v", "more detail: the kubelet's own steps (directories, files, objects read)")
	fs.StringVar(&o.ExpandTo, "expand-to", "", "make every CSI PV this big (e.g. 2Gi) while its claim's status keeps the old size, so the kubelet calls NodeExpandVolume")
	fs.IntVar(&o.MaxAttempts, "max-attempts", 1, "attempts per kubelet operation; a real kubelet retries forever with its backoff (500ms doubling to 2m2s)")
	fs.DurationVar(&o.RetryFor, "retry-for", 0, "keep retrying a failed operation with the kubelet's backoff for this long")
	fs.StringVar(&o.PodUID, "pod-uid", "", "UID of the default pod (used when the manifests hold no Pod)")
	fs.StringVar(&o.VolumeHandle, "volume-handle", "", "volume handle of the default pod's PersistentVolume (default: a volume provisioned by CreateVolume when the driver offers CREATE_DELETE_VOLUME, else sim-volume-1)")
	addServiceAccountFlags(&o.ServiceAccountOptions, fs)
	addAdmissionFlags(&o.Admission, fs)
	addLiveFlags(&o.Live, fs)
	addProvisionFlag(&o.Live, fs)
}

func addConformanceFlags(o *session.ConformanceOptions, fs *pflag.FlagSet) {
	addEndpointFlag(&o.EndpointFlag, fs, session.EndpointUsage)
	addFileFlags(fs, &o.Filenames, &o.Recursive, "the driver's CSIDriver object: a file, a directory or - (repeatable; files may also be given as arguments); without it, scenarios come from the driver's capabilities and the kubelet behaves as without a CSIDriver")
	fs.StringVar(&o.VolumeHandle, "volume-handle", "", "handle of a pre-provisioned volume for the PersistentVolume (default: a 1Gi volume made by CreateVolume when the driver has CREATE_DELETE_VOLUME, else "+conformance.DefaultVolumeHandle+")")
	fs.StringToStringVar(&o.VolumeAttributes, "volume-attributes", nil, "volumeAttributes of the PersistentVolume and of inline volumes, k=v,...")
	fs.BoolVar(&o.ReadOnly, "read-only", false, "make the inline volumes readOnly: true (csi.readOnly), as drivers such as the secrets-store CSI driver require: NodePublishVolume then has readonly set")
	fs.StringVar(&o.TestDriver, "testdriver", "", "Kubernetes' external storage test driver definition (the file of e2e.test -storage.testdriver, YAML or JSON), read strictly: its DriverInfo is checked against the driver and its InlineVolumes drive the inline volumes (docs/conformance.md)")
	fs.StringVar(&o.Focus, "focus", "", "run only the scenarios whose name matches this regexp")
	fs.StringVar(&o.Skip, "skip", "", "leave out the scenarios whose name matches this regexp")
	fs.BoolVar(&o.List, "list", false, "list the scenarios (name, docs/kubelet.md section, what each checks) and exit; no driver needed")
	fs.StringVar(&o.JUnit, "junit", "", "also write the results as JUnit XML to this file")
	fs.StringVar(&o.Report, "report", "", "also write an HTML report (the scenarios as rows, a failure with its calls) to this file")
	addOutputFlag(&o.OutputFlag, fs, "text, or json (one object per scenario, then a summary)")
	addTimeoutFlag(&o.TimeoutFlag, fs, node.DefaultTimeout, "the kubelet's per-operation timeout (csiTimeout); a call taking more than half of it fails timing/half-timeout")
	addReleaseFlags(&o.ReleaseFlags, fs, "the kubelet release to reproduce", "kubelet feature gates over the version's defaults, A=true,B=false")
	addRootDirFlag(&o.RootDirFlag, fs, "where each scenario gets its kubelet root dir (default: a fresh temp dir, removed afterwards)")
	fs.StringVar(&o.NodeName, "node-name", "", "the node's name (default: the host name)")
	fs.IntVar(&o.Parallel, "parallel", conformance.DefaultParallel, "independent scenarios run side by side, at most this many at once (1: one after another, the order faults with a call count expect; -v and --apiserver always run one at a time)")
	addAdmissionFlags(&o.Admission, fs)
	addApiserverFlags(&o.Apiserver, fs)
	fs.CountVarP(&o.Verbose, "verbose", "v", "print each scenario's calls and notes (-vv: the kubelet's own steps too)")
}

func addEndpointFlag(f *session.EndpointFlag, fs *pflag.FlagSet, usage string) {
	fs.StringVar(&f.Endpoint, "endpoint", os.Getenv("CSI_ENDPOINT"), usage)
}

func addLiveFlags(l *replay.Options, fs *pflag.FlagSet) {
	fs.StringVar(&l.Kubeconfig, "kubeconfig", "", "with --pod: the kubeconfig of the cluster to read the pod from (default: $KUBECONFIG, then ~/.kube/config)")
	fs.StringVar(&l.Pod, "pod", "", "replay this pod of a running cluster, NAMESPACE/NAME (NAME: the kubeconfig context's namespace): it and what its volumes reference are read, read-only, instead of -f")
}

func addLoadFlags(o *session.LoadOptions, fs *pflag.FlagSet) {
	addCommonFlags(&o.CommonOptions, fs)
	addEndpointFlag(&o.EndpointFlag, fs, session.EndpointUsage)
	fs.IntVar(&o.Replicas, "replicas", 0, "copies of each input pod, each with a fresh name and UID (and fresh claims, PVs and volume handles unless --shared-volumes)")
	fs.Float64Var(&o.QPS, "qps", 0, "pods created per second (0: all at once)")
	fs.IntVar(&o.Burst, "burst", 1, "pods created at once before --qps applies")
	fs.DurationVar(&o.Duration, "duration", 0, "how long the pods run; with --churn, how long pods keep coming and going")
	fs.Float64Var(&o.Churn, "churn", 0, "with --duration: further pods created per second, each deleted after --churn-lifetime")
	fs.DurationVar(&o.ChurnLifetime, "churn-lifetime", 10*time.Second, "how long a churned pod runs")
	fs.DurationVar(&o.Hold, "hold", 0, "how long each pod runs between mount and teardown (default: --duration)")
	fs.BoolVar(&o.SharedVolumes, "shared-volumes", false, "copies use the input pod's claims: many pods on the same volumes")
	fs.DurationVar(&o.SyncFrequency, "sync-frequency", time.Minute, "the kubelet's pod sync period (requiresRepublish), each pod on its own with the kubelet's jitter")
	fs.DurationVar(&o.RepublishPeriod, "republish-period", 0, "republish at this fixed period instead of the jittered sync frequency")
	fs.DurationVar(&o.StatsPeriod, "volume-stats-agg-period", time.Minute, "the kubelet's volume stats period per pod; 0 disables NodeGetVolumeStats")
	fs.StringVar(&o.Report, "report", "", "write an HTML report (a timeline lane per volume, latency histograms per method) to this file")
	addSidecarFlags(&o.Sidecars, fs)
	addApiserverFlags(&o.Apiserver, fs)
}

func addOutputFlag(f *session.OutputFlag, fs *pflag.FlagSet, usage string) {
	fs.StringVarP(&f.Output, "output", "o", "text", usage)
}

func addPlanFlags(o *session.PlanOptions, fs *pflag.FlagSet) {
	addCommonFlags(&o.CommonOptions, fs)
	fs.StringVar(&o.DriverName, "driver-name", "", "the name the driver reports (default: the CSIDriver in the manifests, else the first CSI volume's driver)")
	fs.StringVar(&o.NodeID, "node-id", "", "the node ID the driver reports in NodeGetInfo (default: the node name)")
	fs.StringSliceVar(&o.Capabilities, "node-capabilities", []string{"STAGE_UNSTAGE_VOLUME"}, "node capabilities the driver reports")
	fs.StringSliceVar(&o.ControllerCapabilities, "controller-capabilities", csiclient.DefaultPlannedControllerCapabilities, "controller capabilities the driver reports, for claims with a StorageClass and no PV (provisioned by CreateVolume, attached by ControllerPublishVolume); none: no controller service")
	fs.StringToStringVar(&o.Topology, "topology", nil, "accessible topology segments the driver reports, key=value,...")
	fs.Int64Var(&o.MaxVolumes, "max-volumes-per-node", 0, "max_volumes_per_node the driver reports")
	fs.StringVar(&o.Report, "report", "", "also write an HTML report of the planned calls (a lane per volume) to this file")
}

func addRootDirFlag(f *session.RootDirFlag, fs *pflag.FlagSet, usage string) {
	fs.StringVar(&f.RootDir, "root-dir", "", usage)
}

func addRunFlags(o *session.RunOptions, fs *pflag.FlagSet) {
	addCommonFlags(&o.CommonOptions, fs)
	addEndpointFlag(&o.EndpointFlag, fs, session.EndpointUsage)
	fs.StringVar(&o.Hold, "hold", "0", "how long the pod runs between mount and teardown: a duration, or 'forever' (until Ctrl-C, which then ends the run with exit 0; SIGTERM: 130)")
	fs.DurationVar(&o.SyncFrequency, "sync-frequency", time.Minute, "the kubelet's pod sync period: a pod is synced (and requiresRepublish volumes republished) every sync-frequency plus up to 50% jitter")
	fs.DurationVar(&o.RepublishPeriod, "republish-period", 0, "republish at this fixed period instead of the sync frequency with jitter (for fast tests)")
	fs.StringVar(&o.ServeOIDC, "serve-oidc", "", "serve the issuer's OIDC discovery and JWKS on this loopback address (e.g. 127.0.0.1:0) during the run")
	fs.StringVar(&o.Report, "report", "", "write an HTML report (a timeline lane per volume, latency histograms per method) to this file")
	fs.DurationVar(&o.StatsPeriod, "volume-stats-agg-period", time.Minute, "the kubelet's volume stats period (each round waits 1x to 2x it); 0 disables NodeGetVolumeStats")
	addSidecarFlags(&o.Sidecars, fs)
	addApiserverFlags(&o.Apiserver, fs)
	fs.StringVar(&o.JUnit, "junit", "", "also write one JUnit test case per volume operation (MountDevice, SetUp, TearDown, ...) to this file")
}

func addSelinuxFlagFlags(f *session.SelinuxFlag, fs *pflag.FlagSet) {
	fl := fs.VarPF(f, "selinux", "", "the node has SELinux (default: detected, /sys/fs/selinux; true simulates an SELinux host, so the kubelet adds context= mount options; false: a host without)")
	fl.NoOptDefVal = "true"
}

func addServiceAccountFlags(o *session.ServiceAccountOptions, fs *pflag.FlagSet) {
	fs.StringVar(&o.Issuer, "issuer", tokens.DefaultIssuer, "the API server's --service-account-issuer (the tokens' iss)")
	fs.StringSliceVar(&o.APIAudiences, "api-audiences", nil, "the API server's --api-audiences, given to tokenRequests with an empty audience (default: the issuer)")
	fs.StringVar(&o.KeyFile, "service-account-key-file", "", "PEM private key that signs tokens, as kube-apiserver takes it (default: a key generated for the run)")
}

func addSidecarFlags(o *session.SidecarOptions, fs *pflag.FlagSet) {
	fs.StringVar(&o.ControllerEndpoint, "controller-endpoint", "", "the driver's controller socket, for CreateVolume, ControllerPublishVolume and their undoing (default: --endpoint, as drivers that serve both on one socket)")
	fs.BoolVar(&o.KeepVolumes, "keep-volumes", false, "keep the volumes provisioned for claims (no DeleteVolume at the end); their handles are printed")
	fs.BoolVar(&o.ExtraCreateMetadata, "extra-create-metadata", false, "the external-provisioner's flag: add csi.storage.k8s.io/pvc/name, pvc/namespace and pv/name to CreateVolume's parameters")
}

func addTimeoutFlag(f *session.TimeoutFlag, fs *pflag.FlagSet, def time.Duration, usage string) {
	fs.DurationVar(&f.Timeout, "timeout", def, usage)
}

func addTokensClaimsFlags(o *tokencmd.TokensClaimsOptions, fs *pflag.FlagSet) {
	addOutputFlag(&o.OutputFlag, fs, "text, or json: one object per token with its header, claims and the times decoded")
}

func addTokensJWKSFlags(o *tokencmd.TokensJWKSOptions, fs *pflag.FlagSet) {
	fs.StringArrayVar(&o.KeyFiles, "key", o.KeyFiles, "PEM `FILE` of public or private keys (repeatable; every key of every file is published)")
}

func addTokensKeygenFlags(o *tokencmd.TokensKeygenOptions, fs *pflag.FlagSet) {
	fs.StringVar(&o.Type, "type", o.Type, "key type: rsa (2048 bits), rsa3072, rsa4096, ecdsa or p256, p384, p521")
	fs.StringVar(&o.PrivateKey, "private-key", o.PrivateKey, "`FILE` to write the private key to, PEM, mode 0600 (the API server's --service-account-signing-key-file)")
	fs.StringVar(&o.PublicKey, "public-key", o.PublicKey, "`FILE` to write the public key to, PKIX PEM, mode 0644 (the API server's --service-account-key-file)")
	fs.BoolVar(&o.Force, "force", o.Force, "replace existing files")
}

func addTokensMintFlags(o *tokencmd.TokensMintOptions, fs *pflag.FlagSet) {
	fs.StringVar(&o.KeyFile, "service-account-key-file", o.KeyFile, "PEM private key `FILE` that signs the token (RSA, or ECDSA P-256/384/521)")
	fs.StringVar(&o.Issuer, "issuer", o.Issuer, "the API server's --service-account-issuer `URL` (the token's iss)")
	fs.StringSliceVar(&o.APIAudiences, "api-audiences", o.APIAudiences, "the API server's --api-audiences, the audiences of a request without any (default: the issuer)")
	fs.StringVarP(&o.Namespace, "namespace", "n", o.Namespace, "the pod's namespace")
	fs.StringVar(&o.ServiceAccount, "service-account", o.ServiceAccount, "the pod's serviceAccountName")
	fs.StringVar(&o.ServiceAccountUID, "service-account-uid", o.ServiceAccountUID, "the ServiceAccount's UID (default: derived from namespace and name, as run does)")
	fs.StringVar(&o.Pod, "pod", o.Pod, "the pod the token is bound to")
	fs.StringVar(&o.PodUID, "pod-uid", o.PodUID, "that pod's UID")
	fs.StringVar(&o.Node, "node", o.Node, "the pod's spec.nodeName (kubernetes.io.node claim; none when empty)")
	fs.StringVar(&o.NodeUID, "node-uid", o.NodeUID, "the Node's UID (empty: the claim carries the name only, as when the Node object is missing)")
	fs.StringArrayVar(&o.Audiences, "audience", o.Audiences, "an audience `AUD` of the request (repeatable; none: the API audiences, as a CSIDriver tokenRequest with audience \"\")")
	fs.Var(&o.Expiration, "expiration-seconds", "spec.expirationSeconds: `N` seconds (default: unset, which the API server makes 3600)")
	addOutputFlag(&o.OutputFlag, fs, "text (the token) or json (the TokenRequest status)")
	addReleaseFlags(&o.ReleaseFlags, fs, "the release whose API server issues the token (its claims), %s, as run's", "feature gates over the release's defaults, A=true,B=false (ServiceAccountTokenJTI, ServiceAccountTokenPodNodeInfo, ...), as run's")
	fs.Var(&o.Now, "now", "the API server's clock: a `TIME`, RFC 3339 (default: the current time); a time in the past makes an expired token")
}

func addTokensServeFlags(o *tokencmd.TokensServeOptions, fs *pflag.FlagSet) {
	fs.StringArrayVar(&o.KeyFiles, "service-account-key-file", o.KeyFiles, "PEM `FILE` of public or private keys to publish (repeatable), as the API server's flag")
	fs.StringVar(&o.Issuer, "issuer", o.Issuer, "the API server's --service-account-issuer `URL` (the discovery document's issuer)")
	fs.StringVar(&o.JWKSURI, "jwks-uri", o.JWKSURI, "the API server's --service-account-jwks-uri `URL` (default: this server's "+tokens.JWKSPath+")")
	fs.StringVar(&o.Addr, "addr", o.Addr, "host:port to listen on (port 0: any free port)")
	fs.BoolVar(&o.AllowNonLoopback, "allow-non-loopback", o.AllowNonLoopback, "allow an --addr that is reachable from other hosts")
}

func addTokensVerifyFlags(o *tokencmd.TokensVerifyOptions, fs *pflag.FlagSet) {
	fs.StringArrayVar(&o.KeyFiles, "key", o.KeyFiles, "PEM `FILE` of public or private keys (repeatable)")
	fs.StringVar(&o.JWKSFile, "jwks", o.JWKSFile, "a JWKS `FILE`, such as the output of 'tokens jwks'")
	fs.StringVar(&o.JWKSURL, "jwks-url", o.JWKSURL, "fetch the JWKS from this `URL` (loopback hosts only, such as 'tokens serve')")
	fs.StringArrayVar(&o.Audiences, "audience", o.Audiences, "the token's aud must hold this audience `AUD` (repeatable: any of them; default: not checked)")
	fs.StringVar(&o.Issuer, "issuer", o.Issuer, "the token's iss must be this `URL` (default: not checked)")
	fs.Var(&o.Now, "now", "check exp, nbf and iat at this `TIME`, RFC 3339 (default: the current time)")
}

func addValidateFlags(o *validate.ValidateOptions, fs *pflag.FlagSet) {
	addFileFlags(fs, &o.Filenames, &o.Recursive, "manifests: a file, a directory or - for stdin (repeatable; files may also be given as arguments)")
	addReleaseFlags(&o.ReleaseFlags, fs, "the release whose API server validates", "feature gates over the version's defaults, A=true,B=false")
	addOutputFlag(&o.OutputFlag, fs, "text or json (one finding per line)")
	addEndpointFlag(&o.EndpointFlag, fs, "also compare the objects with the driver on this socket")
	addTimeoutFlag(&o.TimeoutFlag, fs, 10*time.Second, "timeout of each call to the driver")
	fs.BoolVar(&o.APIServer, "apiserver", false, "also submit every object to a real kube-apiserver (server-side dry run) and print its verdict beside validate's")
	addLiveFlags(&o.Live, fs)
}
