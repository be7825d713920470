import { Validator } from '@seriousme/openapi-schema-validator';
import { openApiDocument } from './src/http/openapi/document.ts';
const v = new Validator();
const res = await v.validate(JSON.parse(openApiDocument().json));
console.log(res.valid, v.version, JSON.stringify(res.errors, null, 1)?.slice(0, 3000));
