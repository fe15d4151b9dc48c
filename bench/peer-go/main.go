// Command peer-go is the GPU pod sizing webhook a team would write with the Go
// standard library alone: the benchmark's point of comparison for gpu-sizer.
// It applies gpu-sizer's default policy to Pods on CREATE and answers the
// same AdmissionReview responses (patch, warnings, denials, audit
// annotations); every other kind and operation is allowed unchanged.
//
//	peer-go -listen 127.0.0.1:8443 -cert tls.crt -key tls.key
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

const (
	keyProfile = "gpu-sizer.io/profile"
	keyOptOut  = "gpu-sizer.io/mutate"
	keySized   = "gpu-sizer.io/sized"

	warningLimit  = 119  // bytes per warning: kubectl may cut longer ones
	warningBudget = 3500 // bytes of warnings per answer (the API server drops past 4096)
	messageBudget = 8192 // denial message and auditAnnotations.sized
	sizedBudget   = 4096 // the gpu-sizer.io/sized annotation
	maxGPUsPerPod = 1 << 20
	maxBodyBytes  = 8 << 20
)

// ---------------------------------------------------------------------------
// HTTP.

type requestError struct{ message string }

func (e *requestError) Error() string { return e.message }

func badRequest(format string, args ...interface{}) error {
	return &requestError{fmt.Sprintf(format, args...)}
}

// review answers one AdmissionReview body; the decision is for the log.
func review(endpoint string, body []byte) (answer *admissionReview, decision string, err error) {
	var in admissionReview
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, "", badRequest("request body is not a valid AdmissionReview: %v", err)
	}
	if in.APIVersion != "admission.k8s.io/v1" {
		return nil, "", badRequest("apiVersion must be admission.k8s.io/v1, found %q (register the webhook with admissionReviewVersions: [v1])", in.APIVersion)
	}
	if in.Kind != "AdmissionReview" {
		return nil, "", badRequest("kind must be AdmissionReview, found %q", in.Kind)
	}
	req := in.Request
	if req == nil {
		return nil, "", badRequest("request is missing or not an object")
	}
	if req.UID == "" {
		return nil, "", badRequest("request.uid is missing or not a non-empty string")
	}
	resp := &admissionResponse{UID: req.UID, Allowed: true}
	answer = &admissionReview{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview", Response: resp}

	// Pods are sized when created; everything else passes unchanged.
	if req.Kind.Group != "" || req.Kind.Kind != "Pod" || req.Operation != "CREATE" || req.SubResource != "" {
		return answer, "allowed", nil
	}
	var p *pod
	if obj := strings.TrimLeft(string(req.Object), " \t\r\n"); strings.HasPrefix(obj, "{") {
		p = new(pod)
		if err := json.Unmarshal(req.Object, p); err != nil {
			return nil, "", badRequest("request.object is not a valid Pod: %v", err)
		}
		if p.Metadata != nil && p.Metadata.DeletionTimestamp != nil {
			return answer, "allowed", nil
		}
	}
	for _, ns := range exemptNamespaces {
		if req.Namespace == ns {
			resp.AuditAnnotations = map[string]string{"bypassed": "namespace \"" + ns + "\" is exempt in the gpu-sizer policy"}
			return answer, "allowed", nil
		}
	}
	if p == nil {
		return nil, "", badRequest("request.object must be the Pod being created, as a JSON object")
	}
	name := req.Name
	if name == "" && p.Metadata != nil {
		name = p.Metadata.Name
		if name == "" {
			name = p.Metadata.GenerateName + "*"
		}
	} else if name == "" {
		name = "*"
	}
	if req.Namespace != "" {
		name = req.Namespace + "/" + name
	}
	patch := &patchBuilder{}
	d := &podDecider{endpoint: endpoint, description: "pod " + name, pod: p, patch: patch}
	out := d.decide()

	decision = "allowed"
	if len(out.changes) > 0 {
		resp.AuditAnnotations = map[string]string{"sized": joinCapped(out.changes, "; ", messageBudget, "containers")}
	}
	if len(out.denials) > 0 {
		decision = "denied"
		message := joinCapped(out.denials, "; ", messageBudget, "denials")
		resp.Allowed = false
		resp.Status = &status{Code: http.StatusForbidden, Reason: "Forbidden", Message: message}
		if resp.AuditAnnotations == nil {
			resp.AuditAnnotations = map[string]string{}
		}
		resp.AuditAnnotations["denied"] = message
	} else if endpoint == "mutate" && len(patch.ops) > 0 {
		decision = "mutated"
		if resp.Patch, err = json.Marshal(patch.ops); err != nil {
			return nil, "", err
		}
		resp.PatchType = "JSONPatch"
	}
	if len(out.warnings) > 0 {
		resp.Warnings = capWarnings(out.warnings)
	}
	return answer, decision, nil
}

func writeJSON(w http.ResponseWriter, code int, value interface{}) {
	body, err := json.Marshal(value)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(body)
}

func writeError(w http.ResponseWriter, code int, message string) {
	writeJSON(w, code, map[string]string{"error": message})
}

func reviewHandler(endpoint string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		started := time.Now()
		uid, decision := "", "error"
		defer func() {
			log.Printf("review endpoint=%s uid=%q decision=%s duration=%s", endpoint, uid, decision, time.Since(started))
		}()
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeError(w, http.StatusMethodNotAllowed, "use POST "+r.URL.Path)
			return
		}
		if ct := r.Header.Get("Content-Type"); !strings.Contains(ct, "application/json") {
			writeError(w, http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type must be application/json, found %q", ct))
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds the size limit of %d bytes", maxBodyBytes))
			} else {
				writeError(w, http.StatusBadRequest, "reading the request body: "+err.Error())
			}
			return
		}
		answer, d, err := review(endpoint, body)
		if err != nil {
			code := http.StatusInternalServerError
			if _, ok := err.(*requestError); ok {
				code = http.StatusBadRequest
			}
			writeError(w, code, err.Error())
			return
		}
		uid, decision = answer.Response.UID, d
		writeJSON(w, http.StatusOK, answer)
	}
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8443", "HOST:PORT to serve HTTPS on")
	certFile := flag.String("cert", "", "server certificate (PEM)")
	keyFile := flag.String("key", "", "server private key (PEM)")
	flag.Parse()
	log.SetPrefix("peer-go ")
	if *certFile == "" || *keyFile == "" {
		log.Fatal("-cert and -key are required")
	}
	cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
	if err != nil {
		log.Fatalf("loading the certificate: %v", err)
	}

	mux := http.NewServeMux()
	mux.Handle("/mutate", reviewHandler("mutate"))
	mux.Handle("/validate", reviewHandler("validate"))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no route "+r.Method+" "+r.URL.Path+" (use POST /mutate, POST /validate, GET /healthz)")
	})
	srv := &http.Server{
		Handler:           mux,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}},
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       5 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("cannot listen on %s: %v", *listen, err)
	}
	fmt.Printf("listening on https://%s\n", ln.Addr())

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	done := make(chan struct{})
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
		close(done)
	}()
	if err := srv.ServeTLS(ln, "", ""); !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
	<-done
}
