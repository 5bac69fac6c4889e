//! A throwaway PKI made with `openssl` for the TLS tests: a CA, a server
//! certificate for `localhost` / `127.0.0.1` and a client certificate, both
//! signed by the CA (valid one day).

use std::process::{Command, Stdio};

use super::Dir;

/// The files [`pki`] writes, as strings for config texts and command lines.
pub struct Pki {
    pub ca: String,
    pub ca_key: String,
    pub server_cert: String,
    pub server_key: String,
    pub client_cert: String,
    pub client_key: String,
}

fn openssl(args: &[&str]) {
    let st = Command::new("openssl").args(args).stderr(Stdio::null()).status().expect("openssl");
    assert!(st.success(), "openssl {args:?}");
}

/// A CA, a server certificate for localhost and a client certificate, in `dir`.
pub fn pki(dir: &Dir) -> Pki {
    let p = |n: &str| dir.path(n).to_str().unwrap().to_string();
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    openssl(
        &[
            &["req", "-x509"][..],
            &ec,
            &["-days", "1", "-subj", "/CN=test-ca", "-keyout", &p("ca.key"), "-out", &p("ca.pem")],
        ]
        .concat(),
    );
    for (name, ext) in
        [("server", "subjectAltName=DNS:localhost,IP:127.0.0.1"), ("client", "extendedKeyUsage=clientAuth")]
    {
        let (key, csr, extf, pem) = (
            p(&format!("{name}.key")),
            p(&format!("{name}.csr")),
            p(&format!("{name}.ext")),
            p(&format!("{name}.pem")),
        );
        openssl(&[&["req"][..], &ec, &["-subj", &format!("/CN={name}"), "-keyout", &key, "-out", &csr]].concat());
        std::fs::write(&extf, ext).unwrap();
        openssl(&[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            &p("ca.pem"),
            "-CAkey",
            &p("ca.key"),
            "-CAcreateserial",
            "-days",
            "1",
            "-extfile",
            &extf,
            "-out",
            &pem,
        ]);
    }
    Pki {
        ca: p("ca.pem"),
        ca_key: p("ca.key"),
        server_cert: p("server.pem"),
        server_key: p("server.key"),
        client_cert: p("client.pem"),
        client_key: p("client.key"),
    }
}
