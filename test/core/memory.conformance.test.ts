import { MemoryRepo } from "../../src/core";
import { storageConformance } from "../conformance/storage";

storageConformance("MemoryRepo (node)", async () => new MemoryRepo());
