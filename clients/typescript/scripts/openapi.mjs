// Writes openapi.json: the OpenAPI document of memq's app (built in-process, no services
// needed), with the repository's Python (PYTHON, default ../../.venv/bin/python).
// tests/integration/test_typescript_client.py fails when the snapshot is stale.
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";

const python = process.env.PYTHON ?? new URL("../../../.venv/bin/python", import.meta.url).pathname;
const code =
    "import json; from memq.api.app import create_app; from memq.shared.settings import Settings; " +
    "print(json.dumps(create_app(Settings(_env_file=None)).openapi(), indent=2, sort_keys=True))";
const document = execFileSync(python, ["-c", code], {
    encoding: "utf8",
    env: { ...process.env, MEMQ_LOG_LEVEL: "ERROR" },
    maxBuffer: 64 * 1024 * 1024,
});
writeFileSync(new URL("../openapi.json", import.meta.url), document);
console.log(`openapi.json: ${Object.keys(JSON.parse(document).paths).length} paths`);
