import { MemoryRepo } from "../../src/core";
import { storageConformance } from "../conformance/storage";

storageConformance("MemoryRepo (workerd)", async () => new MemoryRepo());
