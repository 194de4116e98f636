// Package webhookdiff checks the simulator's admission step against code
// nobody here wrote, in its own module because it imports k8s.io/kubernetes:
//
//   - the Kubernetes e2e webhook server (agnhost's webhook package,
//     test/images/agnhost/webhook), started on loopback and called through
//     admission.Admitter;
//   - the API server's validation of MutatingWebhookConfiguration
//     (pkg/apis/admissionregistration/validation), compared with
//     admission.ValidateConfiguration field error for field error.
//
// Run: cd e2e/webhookdiff && go test ./...
package webhookdiff
