"""The reverse-proxy configuration of docs/deployment.md is valid nginx and matches the server:
its upload limit is ifjudge serve's, the metrics are denied, client addresses are passed on."""
from __future__ import annotations

import re
import subprocess

import pytest

from cli.serve_cmd import DEFAULT_UPLOAD_MB, app_command
from tests.builders import nginx_binary, nginx_files, proxy_config


def test_the_documented_upload_limit_is_the_servers_plus_the_form_framing():
    conf = proxy_config()
    upload = conf[conf.index("location /_stcore/upload_file/"):]
    limit = int(re.search(r"client_max_body_size (\d+)m;", upload).group(1))
    command = app_command(8501, "127.0.0.1")
    assert command[command.index("--server.maxUploadSize") + 1] == str(DEFAULT_UPLOAD_MB)
    assert limit == DEFAULT_UPLOAD_MB + 1
    assert re.search(r"^\s*client_max_body_size 1m;", conf, re.M)  # every other request stays small


def test_the_documented_proxy_limits_rates_denies_metrics_and_passes_the_client_address():
    conf = proxy_config()
    for line in ("limit_req zone=ifjudge_pages", "limit_conn ifjudge_conns", "limit_req zone=ifjudge_uploads",
                 "proxy_set_header X-Forwarded-For $remote_addr;", "proxy_set_header X-Forwarded-Proto $scheme;",
                 "Strict-Transport-Security"):
        assert line in conf
    metrics = conf[conf.index("location = /_stcore/metrics"):]
    assert "deny all;" in metrics[:metrics.index("}")]


def test_nginx_accepts_the_documented_configuration(tmp_path):
    nginx = nginx_binary()
    if nginx is None:
        pytest.skip("no nginx (scripts/nginx.sh unpacks Debian's into .cache/nginx)")
    main = nginx_files(tmp_path)
    run = subprocess.run([nginx, "-t", "-p", str(tmp_path), "-c", str(main), "-e", "stderr"],
                         capture_output=True, text=True)
    assert run.returncode == 0 and "test is successful" in run.stderr, run.stderr
