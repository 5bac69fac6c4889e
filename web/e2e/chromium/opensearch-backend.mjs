// Imported first by chromium-opensearch.mjs: the node the harness starts
// stores into and searches OpenSearch (node.mjs reads E2E_BACKEND).
process.env.E2E_BACKEND = 'opensearch';
