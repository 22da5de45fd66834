import { isRecord } from "../../core/providers/incoming";
import { type Html, html } from "./html";

/*
 * JSON Schemas (the OpenAPI 3.1 dialect our zod schemas turn into) as HTML: a one-line summary of
 * what a schema accepts, and in full the properties of objects and the shapes of unions, nested.
 * A `$ref` stays a link to the component, which the page describes once.
 */

type JsonObject = Record<string, unknown>;
export type Schema = JsonObject | boolean;

/** Past this depth a nested schema is only summarized, so a page stays readable. */
const MAX_DEPTH = 6;

const asSchema = (value: unknown): Schema => (isRecord(value) || typeof value === "boolean" ? value : {});
const schemas = (value: unknown): Schema[] => (Array.isArray(value) ? value.map(asSchema) : []);

/** The anchor of a component schema. */
export const schemaAnchor = (name: string) => `schema-${name}`;

/** The component a `$ref` names (`#/components/schemas/StoredEntry` → StoredEntry). */
function refName(ref: string): string {
  return ref.slice(ref.lastIndexOf("/") + 1);
}

const code = (value: unknown) => html`<code>${JSON.stringify(value)}</code>`;

function join(parts: Html[], separator: string): Html {
  return html`${parts.map((part, i) => (i === 0 ? part : html`${separator}${part}`))}`;
}

function variantsOf(schema: JsonObject): Schema[] {
  return schemas(schema.oneOf ?? schema.anyOf);
}

/** One line naming what a schema accepts: `string`, `array of StoredEntry`, `"at" | "before"`. */
export function schemaSummary(schema: Schema): Html {
  if (schema === true) return html`any value`;
  if (schema === false) return html`nothing`;
  if (typeof schema.$ref === "string") {
    const name = refName(schema.$ref);
    return html`<a href="#${schemaAnchor(name)}">${name}</a>`;
  }
  // `not: {}` admits no value: the field is left out.
  if (isRecord(schema.not) && Object.keys(schema.not).length === 0) return html`absent`;
  if (Array.isArray(schema.enum)) return join(schema.enum.map(code), " | ");
  if ("const" in schema) return code(schema.const);
  const variants = variantsOf(schema);
  if (variants.length > 0) {
    return variants.some(hasDetails)
      ? html`one of ${variants.length} shapes`
      : join(variants.map(schemaSummary), " | ");
  }
  if (Array.isArray(schema.allOf)) return join(schemas(schema.allOf).map(schemaSummary), " and ");
  const types = Array.isArray(schema.type) ? schema.type : schema.type === undefined ? [] : [schema.type];
  if (types.length === 0) return html`any value`;
  const named = types.map((type) =>
    type === "array" ? html`array of ${schemaSummary(asSchema(schema.items))}` : html`${String(type)}`,
  );
  const format =
    typeof schema.format === "string" ? html` <span class="format">(${schema.format})</span>` : "";
  return html`${join(named, " | ")}${format}`;
}

/** Constraints beyond the type: bounds, pattern, default, an example. */
function constraints(schema: JsonObject): Html[] {
  const out: Html[] = [];
  const bound = (key: string, label: string) => {
    if (typeof schema[key] === "number") out.push(html`${label} ${schema[key] as number}`);
  };
  bound("minimum", "≥");
  bound("exclusiveMinimum", ">");
  bound("maximum", "≤");
  bound("exclusiveMaximum", "<");
  bound("minLength", "at least characters:");
  bound("maxLength", "at most characters:");
  bound("minItems", "at least items:");
  bound("maxItems", "at most items:");
  if (typeof schema.pattern === "string") out.push(html`matches <code>${schema.pattern}</code>`);
  if ("default" in schema) out.push(html`default ${code(schema.default)}`);
  if ("example" in schema) out.push(html`e.g. ${code(schema.example)}`);
  return out;
}

function hasDetails(schema: Schema): boolean {
  if (!isRecord(schema) || typeof schema.$ref === "string") return false;
  if (isRecord(schema.properties) || Array.isArray(schema.allOf)) return true;
  if (variantsOf(schema).some(hasDetails)) return true;
  return schema.items !== undefined && hasDetails(asSchema(schema.items));
}

/** What tells a union's shapes apart: the `type` each one fixes, when it fixes one. */
function variantName(variant: Schema, index: number): Html {
  const type = isRecord(variant) && isRecord(variant.properties) ? variant.properties.type : undefined;
  if (isRecord(type) && Array.isArray(type.enum) && type.enum.length === 1)
    return html`type ${code(type.enum[0])}`;
  if (isRecord(type) && "const" in type) return html`type ${code(type.const)}`;
  if (isRecord(variant) && isRecord(variant.properties)) {
    return html`shape ${index + 1}: an object of ${join(
      Object.keys(variant.properties).map((name) => html`<code>${name}</code>`),
      ", ",
    )}`;
  }
  return html`shape ${index + 1}: ${schemaSummary(variant)}`;
}

function properties(schema: JsonObject, depth: number): Html {
  const props = isRecord(schema.properties) ? Object.entries(schema.properties) : [];
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const extra = schema.additionalProperties;
  const rows = props.map(([name, value]) => {
    const prop = asSchema(value);
    return html`<tr>
<td><code>${name}</code>${required.has(name) ? html` <span class="required">required</span>` : ""}</td>
<td>${schemaDetails(prop, depth + 1)}</td>
</tr>`;
  });
  const others =
    extra === undefined || extra === false
      ? ""
      : html`<p class="others">Other fields: ${isRecord(extra) && Object.keys(extra).length > 0 ? schemaSummary(extra) : "any"}.</p>`;
  const table = rows.length > 0 ? html`<table class="properties"><tbody>${rows}</tbody></table>` : "";
  return html`${table}${others}`;
}

/** A schema in full: summary, description, constraints, then properties and shapes, nested. */
export function schemaDetails(schema: Schema, depth = 0): Html {
  const summary = html`<span class="type">${schemaSummary(schema)}</span>`;
  if (!isRecord(schema)) return summary;
  const description = typeof schema.description === "string" ? html`<p>${schema.description}</p>` : "";
  const limits = constraints(schema);
  const limitsLine = limits.length > 0 ? html`<p class="constraints">${join(limits, "; ")}</p>` : "";
  if (depth >= MAX_DEPTH || !hasDetails(schema)) return html`${summary}${description}${limitsLine}`;
  const variants = variantsOf(schema);
  const nested: Html[] = [];
  if (isRecord(schema.properties)) nested.push(properties(schema, depth));
  if (variants.length > 0 && variants.some(hasDetails)) {
    nested.push(
      html`<div class="variants">${variants.map(
        (variant, i) =>
          html`<details class="variant"><summary>${variantName(variant, i)}</summary>${schemaDetails(variant, depth + 1)}</details>`,
      )}</div>`,
    );
  }
  if (Array.isArray(schema.allOf)) {
    nested.push(
      html`<ol class="all-of">${schemas(schema.allOf).map((part) => html`<li>${schemaDetails(part, depth + 1)}</li>`)}</ol>`,
    );
  }
  if (schema.items !== undefined && hasDetails(asSchema(schema.items))) {
    nested.push(
      html`<div class="items"><p class="muted">Each item:</p>${schemaDetails(asSchema(schema.items), depth + 1)}</div>`,
    );
  }
  return html`${summary}${description}${limitsLine}${nested}`;
}
