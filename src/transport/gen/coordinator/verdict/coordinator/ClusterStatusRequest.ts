// Original file: proto/coordinator.proto


export interface ClusterStatusRequest {
}

export interface ClusterStatusRequest__Output {
}
