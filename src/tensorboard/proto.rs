//! The subset of TensorFlow's `event.proto`, `summary.proto`, `tensor.proto` and
//! `tensor_shape.proto` that PyTorch's `SummaryWriter` writes, as prost messages (field
//! numbers as in those files; `oneof` members are optional fields with the same numbers,
//! the same wire format).

use prost::Message;

/// `tensorflow.DataType.DT_STRING`.
pub const DT_STRING: i32 = 7;

/// `tensorflow.Event`: a wall time, a step, and a file version or a summary.
#[derive(Clone, PartialEq, Message)]
pub struct Event {
    #[prost(double, tag = "1")]
    pub wall_time: f64,
    #[prost(int64, tag = "2")]
    pub step: i64,
    #[prost(string, optional, tag = "3")]
    pub file_version: Option<String>,
    #[prost(message, optional, tag = "5")]
    pub summary: Option<Summary>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Summary {
    #[prost(message, repeated, tag = "1")]
    pub value: Vec<SummaryValue>,
}

/// `tensorflow.Summary.Value`.
#[derive(Clone, PartialEq, Message)]
pub struct SummaryValue {
    #[prost(string, tag = "1")]
    pub tag: String,
    #[prost(float, optional, tag = "2")]
    pub simple_value: Option<f32>,
    #[prost(message, optional, tag = "4")]
    pub image: Option<Image>,
    #[prost(message, optional, tag = "5")]
    pub histo: Option<HistogramProto>,
    #[prost(message, optional, tag = "8")]
    pub tensor: Option<TensorProto>,
    #[prost(message, optional, tag = "9")]
    pub metadata: Option<SummaryMetadata>,
}

/// `tensorflow.Summary.Image`: an encoded PNG and its size.
#[derive(Clone, PartialEq, Message)]
pub struct Image {
    #[prost(int32, tag = "1")]
    pub height: i32,
    #[prost(int32, tag = "2")]
    pub width: i32,
    #[prost(int32, tag = "3")]
    pub colorspace: i32,
    #[prost(bytes = "vec", tag = "4")]
    pub encoded_image_string: Vec<u8>,
}

/// `tensorflow.HistogramProto`: `bucket[i]` counts values up to `bucket_limit[i]`.
#[derive(Clone, PartialEq, Message)]
pub struct HistogramProto {
    #[prost(double, tag = "1")]
    pub min: f64,
    #[prost(double, tag = "2")]
    pub max: f64,
    #[prost(double, tag = "3")]
    pub num: f64,
    #[prost(double, tag = "4")]
    pub sum: f64,
    #[prost(double, tag = "5")]
    pub sum_squares: f64,
    #[prost(double, repeated, tag = "6")]
    pub bucket_limit: Vec<f64>,
    #[prost(double, repeated, tag = "7")]
    pub bucket: Vec<f64>,
}

#[derive(Clone, PartialEq, Message)]
pub struct SummaryMetadata {
    #[prost(message, optional, tag = "1")]
    pub plugin_data: Option<PluginData>,
}

#[derive(Clone, PartialEq, Message)]
pub struct PluginData {
    #[prost(string, tag = "1")]
    pub plugin_name: String,
    #[prost(bytes = "vec", tag = "2")]
    pub content: Vec<u8>,
}

/// `tensorflow.TensorProto`, the string form `add_text` writes.
#[derive(Clone, PartialEq, Message)]
pub struct TensorProto {
    #[prost(int32, tag = "1")]
    pub dtype: i32,
    #[prost(message, optional, tag = "2")]
    pub tensor_shape: Option<TensorShapeProto>,
    #[prost(bytes = "vec", repeated, tag = "8")]
    pub string_val: Vec<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
pub struct TensorShapeProto {
    #[prost(message, repeated, tag = "2")]
    pub dim: Vec<Dim>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Dim {
    #[prost(int64, tag = "1")]
    pub size: i64,
}

impl Event {
    /// The protobuf bytes of this event.
    pub fn bytes(&self) -> Vec<u8> {
        self.encode_to_vec()
    }
}
