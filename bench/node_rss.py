#!/usr/bin/env python3
"""The webhook's resident memory with a 5,000-node inventory (docs/performance.md
"Node inventory").

Usage: node_rss.py BUILD_DIR

Serves the micro benchmark's generated fleet (gpu-sizer-micro-bench
--print-node-list: 5,000 Nodes of 20 shapes, as GET /api/v1/nodes answers)
from a small HTTPS API server on loopback, with a watch that stays open and
sends nothing, runs `gpu-sizer serve --kubeconfig` against it, and prints the
webhook's VmRSS from /proc once its /status says the nodes are synced: first
against an empty node list, then against the 5,000 nodes, so the difference
is what the inventory costs.
"""

import http.server
import json
import os
import re
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def api_server(directory, body):
    """An HTTPS server answering the node list with `body` and holding watches open."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if "watch=1" in self.path:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                time.sleep(60)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", f"{directory}/key.pem",
                    "-out", f"{directory}/cert.pem"], check=True, capture_output=True)
    port = free_port()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(f"{directory}/cert.pem", f"{directory}/key.pem")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, port


def rss_with(build, body, directory):
    server, port = api_server(directory, body)
    kubeconfig = Path(directory) / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "bench",
        "clusters": [{"name": "bench", "cluster": {"server": f"https://127.0.0.1:{port}",
                                                   "certificate-authority": f"{directory}/cert.pem"}}],
        "users": [{"name": "bench", "user": {"token": "bench"}}],
        "contexts": [{"name": "bench", "context": {"cluster": "bench", "user": "bench"}}]}))
    metrics = free_port()
    webhook = subprocess.Popen([f"{build}/gpu-sizer", "serve", "--listen", f"127.0.0.1:{free_port()}",
                                "--cert-dir", f"{directory}/certs", "--metrics-listen", f"127.0.0.1:{metrics}",
                                "--node-watch", "on", "--kubeconfig", str(kubeconfig)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while "node-state node-synced" not in subprocess.run(
                ["curl", "-sf", f"http://127.0.0.1:{metrics}/status"], capture_output=True, text=True).stdout:
            if time.monotonic() > deadline:
                raise RuntimeError("the webhook never synced its nodes")
            time.sleep(0.2)
        time.sleep(1)  # the list's transient buffers are freed after it
        status = subprocess.run(["curl", "-sf", f"http://127.0.0.1:{metrics}/metrics"], capture_output=True,
                                text=True).stdout
        nodes = re.search(r"^gpu_sizer_node_inventory_nodes (\S+)", status, re.M).group(1)
        rss = int(re.search(r"VmRSS:\s+(\d+) kB", Path(f"/proc/{webhook.pid}/status").read_text()).group(1))
        return float(nodes), rss
    finally:
        webhook.terminate()
        webhook.wait()
        server.shutdown()


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    fleet = subprocess.run([f"{build}/bench/gpu-sizer-micro-bench", "--print-node-list"], check=True,
                           capture_output=True).stdout
    empty = json.dumps({"kind": "NodeList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"},
                        "items": []}).encode()
    with tempfile.TemporaryDirectory() as directory:
        for name in ("empty", "fleet"):
            os.mkdir(f"{directory}/{name}")
        _, rss_empty = rss_with(build, empty, f"{directory}/empty")
        nodes, rss_fleet = rss_with(build, fleet, f"{directory}/fleet")
    print(json.dumps({"nodes": nodes, "list_bytes": len(fleet), "rss_kib_without_nodes": rss_empty,
                      "rss_kib_with_nodes": rss_fleet, "rss_kib_per_node": (rss_fleet - rss_empty) / max(nodes, 1)}))


if __name__ == "__main__":
    main()
