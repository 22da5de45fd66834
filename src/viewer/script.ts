import { apiScript } from "./browser/api";
import { appScript } from "./browser/app";
import { contextViewScript } from "./browser/context-view";
import { domScript } from "./browser/dom";
import { tokensScript } from "./browser/tokens";
import { treeRowsScript } from "./browser/tree-rows";

/** The viewer's script: its parts in one scope, in the order they depend on each other. */
export const viewerScript = `"use strict";
(() => {
${[domScript, apiScript, tokensScript, treeRowsScript, contextViewScript, appScript].join("\n")}
})();
`;
