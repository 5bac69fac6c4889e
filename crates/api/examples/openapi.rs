//! Prints the API's OpenAPI document, generated from the code:
//! `cargo run -p sluice-api --example openapi > docs/openapi.json`.

fn main() {
    print!("{}", sluice_api::openapi_json());
}
